// What a request body asks for, read from a whole simdjson DOM parse: the reading
// openai::inspect_request (openai/request_inspect.cpp, On-Demand) must agree with wherever this
// parse accepts the body. Each member is looked up by key (the first of a key given twice). Shared
// by the differential test (tests/openai/request_inspect_test.cpp) and fuzz_chunk.cpp.
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>

#include "openai/chunk.hpp"

namespace mpo::openai::reading {

inline RequestInfo inspect_request_by_dom(std::string_view path, std::string_view body) {
  RequestInfo info;
  info.operation = operation_for_path(path);
  if (body.empty()) return info;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS || !root.is_object()) return info;
  info.json = true;
  std::string_view s;
  if (root["model"].get_string().get(s) == simdjson::SUCCESS) info.model = std::string(s);
  bool b = false;
  if (root["stream"].get_bool().get(b) == simdjson::SUCCESS) info.stream = b;
  simdjson::dom::element options;
  if (root["stream_options"].get(options) == simdjson::SUCCESS && options.is_object() &&
      options["include_usage"].get_bool().get(b) == simdjson::SUCCESS) {
    info.usage_requested = b;
  }
  const auto text = [](simdjson::simdjson_result<simdjson::dom::element> from, std::optional<std::string>& into) {
    std::string_view v;
    if (from.get_string().get(v) == simdjson::SUCCESS && !v.empty()) into = std::string(v);
  };
  text(root["previous_response_id"], info.previous_response_id);
  text(root["user"], info.user);
  text(root["safety_identifier"], info.safety_identifier);
  simdjson::dom::element metadata;
  if (root["metadata"].get(metadata) == simdjson::SUCCESS && metadata.is_object()) {
    text(metadata["user_id"], info.metadata_user_id);
  }
  for (const char* key : {"max_completion_tokens", "max_tokens", "max_output_tokens"}) {
    std::int64_t n = 0;
    if (root[key].get_int64().get(n) == simdjson::SUCCESS && n >= 0 && root[key].is_int64()) {
      info.max_tokens = n;
      break;
    }
  }
  return info;
}

}  // namespace mpo::openai::reading
