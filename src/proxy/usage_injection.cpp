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

// The end (one past the closing brace) of the JSON object that opens just before `at` (the
// position after its '{'), strings and nesting skipped; npos when it does not close.
std::size_t object_end(std::string_view s, std::size_t at) {
  int depth = 1;
  for (std::size_t i = at; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"') {
      ++i;
      while (i < s.size() && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// A usage-only chunk's data less its top-level `usage` member (and the comma that joined it), where
// the chunk carries something else a client reads: llama.cpp b10309 puts its `timings` there when
// usage was asked for (without, on the finish chunk), and a client of llama.cpp (its web UI) reads
// them. nullopt: nothing else, drop the chunk.
std::optional<std::string> without_usage(std::string_view data) {
  if (find_top_level_object_value(data, "timings") == std::string_view::npos) return std::nullopt;
  const std::size_t open = find_top_level_object_value(data, "usage");
  if (open == std::string_view::npos) return std::nullopt;
  const std::size_t end = object_end(data, open);
  const std::size_t key = data.rfind("\"usage\"", open);
  if (end == std::string_view::npos || key == std::string_view::npos) return std::nullopt;
  std::size_t from = key, to = end;
  // The comma after the member, else the one before it.
  std::size_t after = to;
  while (after < data.size() &&
         (data[after] == ' ' || data[after] == '\t' || data[after] == '\n' || data[after] == '\r'))
    ++after;
  if (after < data.size() && data[after] == ',') {
    to = after + 1;
  } else {
    std::size_t before = from;
    while (before > 0 && (data[before - 1] == ' ' || data[before - 1] == '\t' || data[before - 1] == '\n' ||
                          data[before - 1] == '\r'))
      --before;
    if (before > 0 && data[before - 1] == ',') from = before - 1;
  }
  std::string out(data.substr(0, from));
  out.append(data.substr(to));
  return out;
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
    std::optional<std::string> kept;  // a usage-only chunk's other members, without its usage
    openai::SseFramer framer;
    framer.feed(event, [&](const openai::SseEvent& e) {
      usage_only = openai::classify_chunk(e.data).kind == openai::ChunkKind::kUsageOnly;
      if (usage_only) kept = without_usage(e.data);
    });
    if (usage_only) {
      ++stripped_;
      if (kept) out.append("data: ").append(*kept).append(held_, end, len);
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
