// Where the tests and benchmarks find the checkout and the built programs. The values live in one
// translation unit CMake generates (build_paths.cpp.in), not in a compile definition of every test:
// a compiler cache then serves every other file to a fresh clone in another folder.
#pragma once

namespace mpo::test {

const char* source_dir();         // the checkout's root (tests/fixtures/, docs/, deploy/ under it)
const char* built_binary_path();  // the modelperfobs program of this build
const char* built_tcp_relay();    // bench: the byte relay of this build ("" where it is not built)

}  // namespace mpo::test
