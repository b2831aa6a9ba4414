# The libFuzzer targets (clang, libFuzzer + ASan + UBSan), built by the target ds4_fuzzers
# (scripts/build.sh builds it with everything; the fuzz tests' fixture fuzz_build otherwise):
# every source is compiled once, with one set of flags, into fuzz/obj and shared by all the
# fuzzers that link it; ninja runs the compiles in parallel with the rest of the build and
# recompiles from clang's depfiles (docs/faults.md §fuzzing). The build's compiler is gcc, so
# these are custom commands calling clang++.
#   ds4_fuzzer(<name> MAIN <file.cpp> [TARGETS <library>...] [EXCLUDE <file-name>...])
#     fuzzer <name> (${DS4D_FUZZ_BIN_DIR}/<name>): MAIN, every C++ source of the libraries with
#     their own COMPILE_OPTIONS (a new .cpp is in at the next configure), and Boost.JSON's
#     implementation; EXCLUDE drops sources the fuzzer never reaches.
#   ds4_fuzz_test(<name> <timeout-s> <command>...)  a ctest fuzz run needing the built fuzzers.
#   ds4_fuzz_build()  the rules and targets; once, after the last ds4_fuzzer.
if(NOT CMAKE_CROSSCOMPILING)
  find_program(DS4D_CLANGXX NAMES clang++ clang++-14)
endif()
set(DS4D_FUZZ_BIN_DIR ${CMAKE_BINARY_DIR}/fuzz/bin)
set(DS4D_FUZZ_JOBS 2 CACHE STRING "Parallel compiles of the fuzz_build test")

function(ds4_fuzzer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MAIN" "TARGETS;EXCLUDE")
  cmake_path(ABSOLUTE_PATH arg_MAIN BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE OUTPUT_VARIABLE main)
  # Boost.JSON's implementation (the build links the compiled library instead).
  set(sources ${main} ${CMAKE_SOURCE_DIR}/tests/gateway/protocol/fuzz/boost_json_src.cpp)
  foreach(target ${arg_TARGETS})
    get_target_property(dir ${target} SOURCE_DIR)
    get_target_property(target_sources ${target} SOURCES)
    foreach(source ${target_sources})
      get_filename_component(file_name ${source} NAME)
      if(NOT source MATCHES "\\.(cpp|cc|c)$" OR file_name IN_LIST arg_EXCLUDE)
        continue()
      endif()
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${dir} NORMALIZE OUTPUT_VARIABLE path)
      get_source_file_property(options ${path} DIRECTORY ${dir} COMPILE_OPTIONS)
      if(options)
        set_property(GLOBAL PROPERTY "ds4_fuzz_options:${path}" "${options}")
      endif()
      list(APPEND sources ${path})
    endforeach()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY ds4_fuzzers ${name})
  set_property(GLOBAL PROPERTY "ds4_fuzzer_sources:${name}" "${sources}")
endfunction()

function(ds4_fuzz_test name timeout)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS fuzz FIXTURES_REQUIRED ds4_fuzzers)
endfunction()

function(ds4_fuzz_build)
  get_property(fuzzers GLOBAL PROPERTY ds4_fuzzers)
  if(NOT fuzzers)
    add_custom_target(ds4_fuzzers)
    return()
  endif()
  # -gline-tables-only: file:line in the sanitizers' stack traces at ~15 % less compile time than -g.
  set(flags -std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
      -fno-sanitize-recover=undefined -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB
      -I${CMAKE_SOURCE_DIR})
  set(compiled "")
  set(binaries "")
  foreach(name ${fuzzers})
    get_property(sources GLOBAL PROPERTY "ds4_fuzzer_sources:${name}")
    set(objects "")
    foreach(path ${sources})
      file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${path})
      set(obj ${CMAKE_BINARY_DIR}/fuzz/obj/${rel}.o)
      if(NOT path IN_LIST compiled)
        get_property(options GLOBAL PROPERTY "ds4_fuzz_options:${path}")
        add_custom_command(OUTPUT ${obj}
          COMMAND ${DS4D_CLANGXX} ${flags} ${options} -MD -MF ${obj}.d -c ${path} -o ${obj}
          DEPENDS ${path} DEPFILE ${obj}.d COMMENT "Fuzz object ${rel}" VERBATIM)
        list(APPEND compiled ${path})
      endif()
      list(APPEND objects ${obj})
    endforeach()
    set(binary ${DS4D_FUZZ_BIN_DIR}/${name})
    add_custom_command(OUTPUT ${binary}
      COMMAND ${DS4D_CLANGXX} ${flags} -fsanitize=fuzzer ${objects} -o ${binary} -lspdlog -lfmt -lxxhash -pthread
      DEPENDS ${objects} COMMENT "Linking fuzzer ${name}" VERBATIM)
    list(APPEND binaries ${binary})
  endforeach()
  add_custom_target(ds4_fuzzers DEPENDS ${binaries})
  # A fuzz test run without scripts/build.sh builds what is missing first (a no-op after it).
  add_test(NAME fuzz_build COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ds4_fuzzers -j ${DS4D_FUZZ_JOBS})
  set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP ds4_fuzzers LABELS fuzz TIMEOUT 1800)
endfunction()
