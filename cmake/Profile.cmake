# Profile-guided optimization of the proxy's path (GCC only). docs/ARCHITECTURE.md, "Profile-guided
# optimization", says why and how the profile is made.
#
# pgo/gcc-VERSION/ holds GCC's profile of the modules a proxied request runs through, recorded by
# scripts/pgo-train under the proxy's benchmark load and committed, laid out as GCC writes it in a
# build folder (src/MODULE/CMakeFiles/TARGET.dir/FILE.cpp.gcda). A Release build by the same GCC
# copies each file beside its object and compiles that target with -fprofile-use: GCC knows which
# branches the proxy takes, inlines by what runs and lays the hot code out together. callgrind
# counted 11% fewer instructions and, in its cache model, 10% fewer instruction-cache misses a
# kept-alive request (the proxy's path outgrew the instruction cache: 3x nginx's misses;
# BENCHMARKS.md, fifty-first session).
#
# GCC names a file's local functions (an anonymous namespace, static) in the profile by the
# source's path as the compiler was given it, and CMake gives absolute ones: a profile recorded in
# one checkout would miss those functions in a clone elsewhere ("Missing counts for called
# function", an error under -Werror: a fresh-clone CI failed so). So the profiled modules compile
# by one relative path in every build folder, mpo-src/... through a link to the checkout
# (cmake/stable-source-paths), in the instrumented build and the one using its profile alike.
#
# A profile only describes the code it was recorded from: a function whose control flow changed
# since is compiled as without a profile (-Wno-coverage-mismatch). Where a function with counts
# calls it, GCC 12 also says "Missing counts for called function", which no option silences: under
# -Werror the launcher then compiles that file again without the profile (cmake/stable-source-paths,
# tests/pgo/stale_profile.sh), so a stale profile costs speed, never the build. Another GCC version finds no profile folder of its version and builds without.
#
# MPO_PGO_GENERATE builds the instrumented binary scripts/pgo-train runs (each process writes its
# counts at exit into its build folder).

option(MPO_PGO "Optimize the proxy's modules with the committed GCC profile (pgo/gcc-VERSION)" ON)
option(MPO_PGO_GENERATE "Instrument the build to record a profile (scripts/pgo-train)" OFF)

set(MPO_PGO_DIR "${PROJECT_SOURCE_DIR}/pgo/gcc-${CMAKE_CXX_COMPILER_VERSION}")
set(MPO_PGO_NOTE "")

# The modules a proxied request runs through: scripts/pgo-train keeps their counts (its `modules`).
set(MPO_PGO_MODULES core net openai ledger proxy)

if(MPO_PGO_GENERATE)
  add_compile_options(-fprofile-generate -fprofile-update=atomic)
  add_link_options(-fprofile-generate)
  set(MPO_PGO_NOTE "instrumented to record a profile")
endif()

# mpo_stable_source_paths(): the profiled modules' files compiled by the path mpo-src/... (a link
# in the build folder to the checkout), in the instrumented build and in the one that uses its
# profile alike (cmake/stable-source-paths says why).
function(mpo_stable_source_paths)
  file(CREATE_LINK "${PROJECT_SOURCE_DIR}" "${CMAKE_BINARY_DIR}/mpo-src" SYMBOLIC)
  foreach(module IN LISTS MPO_PGO_MODULES)
    get_property(targets DIRECTORY "${PROJECT_SOURCE_DIR}/src/${module}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(NOT type STREQUAL "STATIC_LIBRARY")
        continue()
      endif()
      get_target_property(launcher ${target} CXX_COMPILER_LAUNCHER)
      if(NOT launcher)
        set(launcher "")
      endif()
      set_property(TARGET ${target} PROPERTY CXX_COMPILER_LAUNCHER
                   "${PROJECT_SOURCE_DIR}/cmake/stable-source-paths" "${PROJECT_SOURCE_DIR}" mpo-src ${launcher})
    endforeach()
  endforeach()
endfunction()

# mpo_apply_profile(): -fprofile-use on each target the profile folder has files for.
function(mpo_apply_profile)
  if(MPO_PGO_GENERATE)
    mpo_stable_source_paths()
  endif()
  if(NOT MPO_PGO OR MPO_PGO_GENERATE OR MPO_SANITIZE OR MPO_FUZZ OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
     OR NOT CMAKE_BUILD_TYPE STREQUAL "Release")
    return()
  endif()
  if(NOT IS_DIRECTORY "${MPO_PGO_DIR}")
    message(STATUS "profile-guided optimization: none (no ${MPO_PGO_DIR} for g++ ${CMAKE_CXX_COMPILER_VERSION})")
    return()
  endif()
  file(GLOB_RECURSE profiles RELATIVE "${MPO_PGO_DIR}" CONFIGURE_DEPENDS "${MPO_PGO_DIR}/*.gcda")
  set(targets "")
  set(count 0)
  foreach(rel IN LISTS profiles)
    # src/proxy/CMakeFiles/mpo_proxy_server.dir/server.cpp.gcda -> mpo_proxy_server, server.cpp
    if(NOT rel MATCHES "^(.*)/CMakeFiles/([A-Za-z0-9_]+)\\.dir/(.+)\\.gcda$")
      continue()
    endif()
    set(target "${CMAKE_MATCH_2}")
    set(source "${CMAKE_MATCH_3}")
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(source_dir ${target} SOURCE_DIR)
    get_target_property(binary_dir ${target} BINARY_DIR)
    set(copy "${binary_dir}/CMakeFiles/${target}.dir/${source}.gcda")
    # configure_file copies again (and CMake reconfigures) when the committed file changes; the
    # object depends on its copy, so a new profile recompiles what it covers.
    configure_file("${MPO_PGO_DIR}/${rel}" "${copy}" COPYONLY)
    set_property(SOURCE "${source_dir}/${source}" TARGET_DIRECTORY ${target} APPEND PROPERTY OBJECT_DEPENDS "${copy}")
    list(APPEND targets ${target})
    math(EXPR count "${count} + 1")
  endforeach()
  list(REMOVE_DUPLICATES targets)
  mpo_stable_source_paths()
  foreach(target IN LISTS targets)
    # -fprofile-partial-training: what the training load never ran is optimized as without a
    # profile, not for size. -Wno-missing-profile: a target's new file has no profile yet.
    target_compile_options(${target} PRIVATE -fprofile-use -fprofile-partial-training -Wno-missing-profile
                                             -Wno-coverage-mismatch)
  endforeach()
  list(LENGTH targets ntargets)
  message(STATUS "profile-guided optimization: ${count} files of ${ntargets} targets from ${MPO_PGO_DIR}")
  set(MPO_PGO_NOTE "profile-guided: ${count} files from pgo/gcc-${CMAKE_CXX_COMPILER_VERSION}" PARENT_SCOPE)
endfunction()
