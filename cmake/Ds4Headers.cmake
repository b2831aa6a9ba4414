# ds4_headers(<target> [PUBLIC <header>...])
#
# Who sees which header. Sources include headers by their path in the tree
# ("engine/model/model.hpp"), but no target gets the whole tree on its include path:
#   - a target sees every header of its own folder (a view of that folder in
#     <build>/include-private/<target>/, a symlink), PRIVATE;
#   - a library exports only the headers listed after PUBLIC (symlinks, one per header, in
#     <build>/include/<target>/), INTERFACE, so what links it sees those and nothing else.
# A public header may include only public headers of its own library and of the libraries it
# links PUBLIC; the build fails otherwise, which is the point. Tests, benchmarks and fuzzers are
# white-box: tests/, benchmarks/ and fuzz/ add the source root for themselves.
function(ds4_headers target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "PUBLIC")
  file(RELATIVE_PATH folder ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})

  set(private_root ${CMAKE_BINARY_DIR}/include-private/${target})
  get_filename_component(parent ${private_root}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT IS_SYMLINK ${private_root}/${folder})
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR} ${private_root}/${folder} SYMBOLIC)
  endif()
  target_include_directories(${target} PRIVATE ${private_root})

  if(ARG_PUBLIC)
    set(public_root ${CMAKE_BINARY_DIR}/include/${target})
    file(REMOVE_RECURSE ${public_root})  # a header dropped from the list stops being visible
    foreach(header ${ARG_PUBLIC})
      if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${header})
        message(FATAL_ERROR "ds4_headers(${target}): no public header ${folder}/${header}")
      endif()
      get_filename_component(dir ${public_root}/${folder}/${header} DIRECTORY)
      file(MAKE_DIRECTORY ${dir})
      file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${header} ${public_root}/${folder}/${header} SYMBOLIC)
    endforeach()
    target_include_directories(${target} INTERFACE ${public_root})
  endif()
endfunction()
