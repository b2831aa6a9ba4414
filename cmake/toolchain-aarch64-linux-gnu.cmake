# Cross-compiling for arm64 (AArch64) Debian from an amd64 Debian 12 host:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
# Needs g++-aarch64-linux-gnu and the :arm64 -dev packages (multiarch, scripts/install-deps.sh
# installs both). Test programs run through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), so
# ctest and gtest_discover_tests work in the cross build dir unchanged.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(DS4D_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${DS4D_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${DS4D_CROSS_TRIPLE}-g++)

# Debian multiarch: arm64 libraries in /usr/lib/aarch64-linux-gnu, headers shared in
# /usr/include, CMake package files under /usr/lib/aarch64-linux-gnu/cmake.
set(CMAKE_LIBRARY_ARCHITECTURE ${DS4D_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH /usr/${DS4D_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${DS4D_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")

# Run arm64 programs (tests, the model forge step) under user-mode emulation. No -L prefix: the
# arm64 loader and libc must come from the multiarch libc6:arm64 (/lib/ld-linux-aarch64.so.1,
# /lib/aarch64-linux-gnu), the same build as every other :arm64 library; the cross toolchain's
# own copy in /usr/aarch64-linux-gnu is an older glibc build, and mixing the two hangs in
# pthread_create. QEMU_CPU picks the emulated CPU (the test command uses it to run the suites
# with and without the dotprod extension).
find_program(DS4D_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(DS4D_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${DS4D_QEMU_AARCH64})
endif()
