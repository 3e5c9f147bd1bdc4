# Shows that the layering check fails on violations: runs it over SYNTHETIC_violations/ (one
# deliberate violation of each rule) and expects a failure that names every one of them.
#   cmake -DCHECK=<check_layers.cmake> -DTREE=<SYNTHETIC_violations/src> -DGRAPH=<ARCHITECTURE.md> -P expect_violations.cmake
execute_process(COMMAND ${CMAKE_COMMAND} -DSRC_DIR=${TREE} -DGRAPH=${GRAPH} -P ${CHECK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the layering check passed a tree of violations:\n${out}${err}")
endif()
foreach(expected
    "report/uses_asio.cpp: a pure file includes boost/asio"
    "report/reaches_up.cpp: includes sweep/receipt.hpp, but report (pure) may use only"
    "ledger/edge_header.cpp: includes net/client.hpp, but ledger (pure) may use only"
    "ledger/edge_header.cpp: a pure file includes the edge header net/client.hpp"
    "newmod/thing.cpp: module 'newmod' (pure) is not in the module graph"
    "src/sim/CMakeLists.txt: mpo_sim uses core but does not declare mpo_core in DEPS")
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the layering check did not report: ${expected}\nit said:\n${err}")
  endif()
endforeach()
message(STATUS "the layering check refuses each of the 6 deliberate violations")
