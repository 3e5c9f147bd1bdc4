// Reading test fixtures from tests/fixtures/ (support/build_paths.hpp says where the checkout is).
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "support/build_paths.hpp"

namespace mpo::test {

inline std::string fixture_path(const std::string& name) {
  return std::string(mpo::test::source_dir()) + "/tests/fixtures/" + name;
}

inline std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  if (!in) throw std::runtime_error("missing fixture " + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The body of a `curl -si` capture (tests/fixtures/llamacpp/*.http): what follows the blank line
// after the headers, "" when there is none.
inline std::string capture_body(const std::string& name) {
  const std::string raw = read_fixture(name);
  const auto at = raw.find("\r\n\r\n");
  return at == std::string::npos ? std::string() : raw.substr(at + 4);
}

}  // namespace mpo::test
