// Reading test fixtures from tests/fixtures/ (MPO_SOURCE_DIR is set by CMake).
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace mpo::test {

inline std::string fixture_path(const std::string& name) {
  return std::string(MPO_SOURCE_DIR) + "/tests/fixtures/" + name;
}

inline std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace mpo::test
