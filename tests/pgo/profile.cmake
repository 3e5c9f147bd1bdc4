# Profile-guided optimization (cmake/Profile.cmake): `modelperfobs --version` says how the binary
# was built, as configured; where scripts/pgo-train recorded a profile (pgo/, not committed), each
# of its files belongs to a source that still exists (a renamed or deleted file leaves a dead
# profile: rerun scripts/pgo-train), and where the build used it, it covers the files a proxied
# request spends its time in.
#   cmake -DBIN=... -DNOTE=... -DSRC=... -DPROFILE_DIR=... -P profile.cmake
execute_process(COMMAND ${BIN} --version RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^modelperfobs [0-9.]+\nbuilt by ([^\n]*)\n$")
  message(FATAL_ERROR "modelperfobs --version: exit ${rc}, expected two lines (version, how it was built):\n${out}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL NOTE)
  message(FATAL_ERROR "modelperfobs --version says 'built by ${CMAKE_MATCH_1}', the build was configured as '${NOTE}'")
endif()

file(GLOB_RECURSE profiles RELATIVE "${SRC}/pgo" "${SRC}/pgo/*.gcda")
foreach(rel IN LISTS profiles)
  # gcc-12.2.0/src/proxy/CMakeFiles/mpo_proxy_server.dir/server.cpp.gcda -> src/proxy/server.cpp
  if(NOT rel MATCHES "^gcc-[^/]+/(src/[^/]+)/CMakeFiles/[A-Za-z0-9_]+\\.dir/(.+)\\.gcda$")
    message(FATAL_ERROR "pgo/${rel}: not where scripts/pgo-train puts a profile file")
  endif()
  if(NOT EXISTS "${SRC}/${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
    message(FATAL_ERROR "pgo/${rel}: its source ${CMAKE_MATCH_1}/${CMAKE_MATCH_2} is gone: rerun scripts/pgo-train")
  endif()
endforeach()

if(NOTE MATCHES "profile-guided")
  foreach(hot src/proxy/CMakeFiles/mpo_proxy_server.dir/exchange.cpp src/proxy/CMakeFiles/mpo_proxy_server.dir/server.cpp
              src/proxy/CMakeFiles/mpo_proxy_server.dir/socket_io.cpp src/proxy/CMakeFiles/mpo_proxy.dir/request_head.cpp
              src/proxy/CMakeFiles/mpo_proxy_http.dir/backend_parser.cpp src/openai/CMakeFiles/mpo_openai.dir/chunk_scan.cpp
              src/openai/CMakeFiles/mpo_openai.dir/stream_tap.cpp src/ledger/CMakeFiles/mpo_ledger.dir/writer.cpp)
    if(NOT EXISTS "${PROFILE_DIR}/${hot}.gcda")
      message(FATAL_ERROR "the profile in ${PROFILE_DIR} has no counts for ${hot}: rerun scripts/pgo-train")
    endif()
  endforeach()
endif()
list(LENGTH profiles n)
message(STATUS "built by ${NOTE}; ${n} profile files checked")
