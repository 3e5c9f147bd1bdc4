# Shows that the house rules fail where they should: runs check_house.cmake over SYNTHETIC_house/
# (one deliberate breach of each rule) and expects a failure that names every one of them.
#   cmake -DCHECK=<check_house.cmake> -DTREE=<SYNTHETIC_house/src> -DDOC=<ARCHITECTURE.md> -P expect_house_problems.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -DSRC_DIR=${TREE} -DDOC=${DOC} -P ${CHECK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the house rules passed a tree that breaks them:\n${out}${err}")
endif()
foreach(expected
    "src/newmod/no_comment.cpp: does not open with a comment"
    "src/newmod/own_code.cpp: makes an error code of its own"
    "has no row for `mpo_newmod`")
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the house rules did not report: ${expected}\nthey said:\n${err}")
  endif()
endforeach()
message(STATUS "the house rules refuse each of the 3 deliberate breaches")
