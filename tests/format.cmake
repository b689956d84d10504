# Fails when a C source or header differs from what clang-format makes of it.
file(GLOB_RECURSE files ${SRC}/src/*.[ch] ${SRC}/include/*.h ${SRC}/tests/*.[ch])
list(FILTER files EXCLUDE REGEX "ziggurat_tables\\.h$")
execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${files} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang-format: the files above need formatting (clang-format -i)")
endif()
