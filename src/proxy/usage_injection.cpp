// The implementation of proxy/usage_injection.hpp. `--usage inject`: make a streamed
// chat/completions request ask for usage, and keep the usage-only chunk from a client that had not
// asked for it.
#include "proxy/usage_injection.hpp"

#include <simdjson.h>

#include "openai/chunk.hpp"
#include "openai/sse_framer.hpp"

namespace mpo::proxy {
namespace {

// Position just after the '{' that opens the value of top-level key `key`, or npos.
std::size_t find_top_level_object_value(std::string_view s, std::string_view key) {
  int depth = 0;
  bool expect_key = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      const std::size_t start = i + 1;
      std::size_t j = start;
      while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      if (j >= s.size()) return std::string_view::npos;
      const std::string_view str = s.substr(start, j - start);
      i = j;
      if (depth == 1 && expect_key && str == key) {
        std::size_t k = i + 1;
        while (k < s.size() && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r')) ++k;
        if (k < s.size() && s[k] == ':') ++k;
        while (k < s.size() && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r')) ++k;
        return k < s.size() && s[k] == '{' ? k + 1 : std::string_view::npos;
      }
      expect_key = false;
    } else if (c == '{' || c == '[') {
      ++depth;
      expect_key = c == '{' && depth == 1;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      expect_key = true;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::optional<std::string> inject_include_usage(std::string_view body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS || !root.is_object()) return std::nullopt;
  simdjson::dom::element so;
  std::string out(body);
  if (root["stream_options"].get(so) == simdjson::NO_SUCH_FIELD) {
    const bool empty_object = root.get_object().value().size() == 0;
    out.insert(out.find('{') + 1, empty_object ? R"("stream_options":{"include_usage":true})"
                                               : R"("stream_options":{"include_usage":true},)");
    return out;
  }
  if (!so.is_object()) return std::nullopt;
  bool already = false;
  if (so["include_usage"].get_bool().get(already) == simdjson::SUCCESS && already) return std::nullopt;
  if (so["include_usage"].error() == simdjson::SUCCESS) return std::nullopt;  // false: the client said no
  const auto at = find_top_level_object_value(body, "stream_options");
  if (at == std::string_view::npos) return std::nullopt;
  const bool empty = so.get_object().value().size() == 0;
  out.insert(at, empty ? R"("include_usage":true)" : R"("include_usage":true,)");
  return out;
}

std::string UsageStripper::filter(std::string_view piece, bool last) {
  held_.append(piece);
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    std::size_t end = std::string::npos, len = 0;
    for (std::string_view sep : {"\r\n\r\n", "\n\n", "\r\r"}) {
      const auto at = held_.find(sep, pos);
      if (at != std::string::npos && (end == std::string::npos || at < end)) {
        end = at;
        len = sep.size();
      }
    }
    if (end == std::string::npos) break;
    const std::string_view event(held_.data() + pos, end + len - pos);
    bool usage_only = false;
    openai::SseFramer framer;
    framer.feed(event, [&](const openai::SseEvent& e) {
      usage_only = openai::classify_chunk(e.data).kind == openai::ChunkKind::kUsageOnly;
    });
    if (usage_only) {
      ++stripped_;
    } else {
      out.append(event);
    }
    pos = end + len;
  }
  held_.erase(0, pos);
  if (last) {
    out += held_;
    held_.clear();
  }
  return out;
}

}  // namespace mpo::proxy
