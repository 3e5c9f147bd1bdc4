// What reading each API's stream costs the proxy: the stream tap (SSE framing, classification,
// usage, timings) over the real llama.cpp b10309 captures of chat, the Responses API and Anthropic
// Messages, fed one event per read as a proxy sees them. Prints events/s on one core and ns per
// event for each, with the ratio to chat measured in the same run (median of 7 alternating rounds).
//
//   tap_bench [--seconds-per-round S]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "openai/stream_tap.hpp"
#include "support/build_paths.hpp"

namespace {

std::string capture_body(const std::string& name) {
  std::ifstream in(std::string(mpo::test::source_dir()) + "/tests/fixtures/llamacpp/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string raw = ss.str();
  const auto at = raw.find("\r\n\r\n");
  if (at == std::string::npos) {
    fmt::print(stderr, "tap_bench: cannot read {}\n", name);
    std::exit(1);
  }
  return raw.substr(at + 4);
}

std::vector<std::string> events_of(const std::string& body) {
  std::vector<std::string> out;
  for (std::size_t at = 0, end; (end = body.find("\n\n", at)) != std::string::npos; at = end + 2) {
    out.push_back(body.substr(at, end + 2 - at));
  }
  return out;
}

struct Api {
  const char* name;
  std::vector<std::string> events;
  std::vector<double> events_per_s;
};

// Streams through a fresh tap, each event one feed(), for about `seconds`; events/s.
double round_of(const Api& api, double seconds) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  long events = 0;
  long checksum = 0;
  std::int64_t t = 0;
  while (std::chrono::duration<double>(clock::now() - start).count() < seconds) {
    for (int k = 0; k < 64; ++k) {
      mpo::openai::StreamTap tap(true);
      for (const auto& e : api.events) tap.feed(e, t += 1000);
      tap.finish(true);
      checksum += tap.content_events() + (tap.saw_terminal() ? 1 : 0);
      events += static_cast<long>(api.events.size());
    }
  }
  const double s = std::chrono::duration<double>(clock::now() - start).count();
  if (checksum == 0) std::abort();  // keeps the work observable
  return static_cast<double>(events) / s;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0.5;
  if (argc == 3 && std::strcmp(argv[1], "--seconds-per-round") == 0) seconds = std::atof(argv[2]);
  std::vector<Api> apis = {
      {"chat", events_of(capture_body("llamacpp_b10309_chat_stream.http")), {}},
      {"responses", events_of(capture_body("llamacpp_b10309_responses_stream.http")), {}},
      {"messages", events_of(capture_body("llamacpp_b10309_messages_stream.http")), {}},
  };
  for (int r = 0; r < 7; ++r) {
    for (auto& api : apis) api.events_per_s.push_back(round_of(api, seconds));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double chat = median(apis[0].events_per_s);
  fmt::print("stream tap over the real llama.cpp b10309 captures, one event per feed, one core\n");
  fmt::print("  {:<10} {:>8} {:>14} {:>12} {:>10}\n", "api", "events", "events/s", "ns/event", "vs chat");
  for (const auto& api : apis) {
    const double m = median(api.events_per_s);
    fmt::print("  {:<10} {:>8} {:>14.0f} {:>12.0f} {:>10.2f}\n", api.name, api.events.size(), m, 1e9 / m, m / chat);
  }
  return 0;
}
