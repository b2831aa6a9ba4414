# cmake -DIN=<preprocessed device_kernels.cu> -DOUT=<list.inc> -P ListKernels.cmake
# Writes DS4_EMULATED_KERNEL(name) for every `extern "C" void ds4_...(` the preprocessor produced
# (the emulator makes __global__ `inline` and defines __launch_bounds__ away), rewriting OUT only
# on change.
cmake_policy(VERSION 3.25)
file(READ ${IN} text)
string(REGEX MATCHALL "extern \"C\"[ \t\r\n]+(inline[ \t\r\n]+)?void[ \t\r\n]+ds4_[A-Za-z0-9_]+[ \t\r\n]*\\(" decls
  "${text}")
set(body "")
set(seen "")
foreach(d IN LISTS decls)
  string(REGEX REPLACE ".*(ds4_[A-Za-z0-9_]+).*" "\\1" name "${d}")
  if(NOT name IN_LIST seen)
    list(APPEND seen ${name})
    string(APPEND body "DS4_EMULATED_KERNEL(${name})\n")
  endif()
endforeach()
list(LENGTH seen n)
if(n EQUAL 0)
  message(FATAL_ERROR "ListKernels: no kernel found in ${IN}")
endif()
if(EXISTS ${OUT})
  file(READ ${OUT} old)
  if(old STREQUAL body)
    return()
  endif()
endif()
file(WRITE ${OUT} "${body}")
