# ds4_fuzz_sources(<output-file> <target>... [EXCLUDE <file-name>...])
#
# Writes the C++ sources of the targets, one a line: the absolute path, then the file's own
# COMPILE_OPTIONS (the AVX2 kernels' -mavx2, say), separated by spaces. The fuzz scripts compile
# these with clang and the sanitizers instead of a list of their own, so a .cpp added to (or
# moved out of) a library is in its fuzz build at the next configure: a hand-kept list went stale
# and broke the fuzz link more than once. Call it after the targets are defined (from tests/).
# EXCLUDE names sources (by file name) the fuzzers never reach and must not compile.
function(ds4_fuzz_sources output)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "EXCLUDE")
  set(lines "")
  foreach(target ${arg_UNPARSED_ARGUMENTS})
    get_target_property(dir ${target} SOURCE_DIR)
    get_target_property(sources ${target} SOURCES)
    foreach(source ${sources})
      get_filename_component(name ${source} NAME)
      if(NOT source MATCHES "\\.(cpp|cc|c)$" OR name IN_LIST arg_EXCLUDE)
        continue()
      endif()
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${dir} NORMALIZE OUTPUT_VARIABLE path)
      get_source_file_property(options ${path} DIRECTORY ${dir} COMPILE_OPTIONS)
      if(options)
        string(REPLACE ";" " " options "${options}")
        string(APPEND lines "${path} ${options}\n")
      else()
        string(APPEND lines "${path}\n")
      endif()
    endforeach()
  endforeach()
  file(GENERATE OUTPUT ${output} CONTENT "${lines}")
endfunction()
