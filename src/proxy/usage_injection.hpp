// `--usage inject`: make a streamed chat/completions request ask for usage, and keep the
// usage-only chunk from a client that had not asked for it. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mpo::proxy {

// Returns the body with stream_options.include_usage set to true, or nullopt when the body is not
// a JSON object or already asks for it. Everything else in the body is kept byte for byte (no
// re-serialisation, so numbers and key order are untouched).
std::optional<std::string> inject_include_usage(std::string_view body);

// Passes SSE bytes through, event by event, minus usage-only events; one that also carries
// llama.cpp's `timings` is passed on without its `usage` member (the client keeps the engine's
// timings, which it gets when it does not ask for usage, on the finish chunk).
class UsageStripper {
 public:
  // Returns the bytes to forward now; `last` flushes whatever is held.
  std::string filter(std::string_view piece, bool last);
  int stripped() const { return stripped_; }

 private:
  std::string held_;
  int stripped_ = 0;
};

}  // namespace mpo::proxy
