// inspect_request (openai/chunk.hpp): what a request body asks for, read with simdjson's On-Demand
// API. Only a handful of top-level members matter (model, stream, stream_options, the session
// keys, the output limit); the rest of the body (the messages, the tools: nearly all of an agent's
// request) is stepped over, never unescaped into a document. A DOM parse of a 52 KB agent request cost 8.2 us,
// this reading 4.5 us (issue 43; docs/BENCHMARKS.md).
//
// What it checks: the structure the reading walks through (the root object, every top-level key,
// the values it reads, nothing after the root); a fault inside a value it steps over (a malformed
// number in `messages`, say) goes unseen: the engine answers that request, and the ledger keeps
// its answer. Where a DOM parse accepts the body, both read the same (fuzz/fuzz_chunk.cpp checks
// it against fuzz/request_reading.hpp's DOM reading).
//
// simdjson 3.0 builds On-Demand's walk for the implementation the compiler targets (x86-64's
// baseline: its portable one); the pass that indexes the body (stage 1) is the one chosen at run
// time for the CPU (AVX2 or AVX-512 here), and it is nearly all of the cost on a long body.
#include <simdjson.h>

#include <string>

#include "openai/chunk.hpp"

namespace mpo::openai {
namespace {

namespace od = simdjson::ondemand;

// The top-level keys read; each is a bit of read_members' `seen` (the first of a key given twice is
// the one read, as a lookup by key finds it).
enum Key : int {
  kModel,
  kStream,
  kStreamOptions,
  kPreviousResponseId,
  kUser,
  kSafetyIdentifier,
  kMetadata,
  kMaxCompletionTokens,
  kMaxTokens,
  kMaxOutputTokens
};

int key_index(std::string_view k) {
  switch (k.size()) {
    case 4: return k == "user" ? int{kUser} : -1;
    case 5: return k == "model" ? int{kModel} : -1;
    case 6: return k == "stream" ? int{kStream} : -1;
    case 8: return k == "metadata" ? int{kMetadata} : -1;
    case 10: return k == "max_tokens" ? int{kMaxTokens} : -1;
    case 14: return k == "stream_options" ? int{kStreamOptions} : -1;
    case 17:
      return k == "safety_identifier" ? int{kSafetyIdentifier} : k == "max_output_tokens" ? int{kMaxOutputTokens} : -1;
    case 20: return k == "previous_response_id" ? int{kPreviousResponseId} : -1;
    case 21: return k == "max_completion_tokens" ? int{kMaxCompletionTokens} : -1;
    default: return -1;
  }
}

// A number value into `into` when it is a non-negative integer (within int64). false on a malformed
// value.
bool read_count(od::value& v, std::optional<std::int64_t>& into) {
  od::json_type t;
  if (v.type().get(t) != simdjson::SUCCESS) return false;
  if (t != od::json_type::number) return true;
  od::number n;
  if (v.get_number().get(n) != simdjson::SUCCESS) return false;
  if (n.is_int64() && n.get_int64() >= 0) into = n.get_int64();
  return true;
}

// A string value's text into `into` when it is a string (`non_empty`: a non-empty one). false on a
// malformed value.
bool read_text(od::value& v, std::optional<std::string>& into, bool non_empty = true) {
  od::json_type t;
  if (v.type().get(t) != simdjson::SUCCESS) return false;
  if (t != od::json_type::string) return true;
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return false;
  if (!non_empty || !s.empty()) into = std::string(s);
  return true;
}

// A boolean value into `into` when it is one. false on a malformed value.
bool read_bool(od::value& v, bool& into) {
  od::json_type t;
  if (v.type().get(t) != simdjson::SUCCESS) return false;
  if (t != od::json_type::boolean) return true;
  return v.get_bool().get(into) == simdjson::SUCCESS;
}

// The first `wanted` member of an object value, read by `read` (when the value is an object); every
// key of the object is walked. false on a malformed object.
template <class Read>
bool read_member(od::value& v, std::string_view wanted, Read&& read) {
  od::json_type t;
  if (v.type().get(t) != simdjson::SUCCESS) return false;
  if (t != od::json_type::object) return true;
  od::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) return false;
  bool seen = false;
  for (auto member : o) {
    od::field f;
    if (std::move(member).get(f) != simdjson::SUCCESS) return false;
    std::string_view k;
    if (f.unescaped_key().get(k) != simdjson::SUCCESS) return false;
    if (seen || k != wanted) continue;
    seen = true;
    if (!read(f.value())) return false;
  }
  return true;
}

// The members of the root object into `info`; false when the walk met a fault.
bool read_members(od::object top, RequestInfo& info) {
  unsigned seen = 0;
  std::optional<std::int64_t> limits[3];  // max_completion_tokens, max_tokens, max_output_tokens
  for (auto member : top) {
    od::field f;
    if (std::move(member).get(f) != simdjson::SUCCESS) return false;
    std::string_view k;
    if (f.unescaped_key().get(k) != simdjson::SUCCESS) return false;
    const int i = key_index(k);
    if (i < 0 || (seen & (1u << i)) != 0) continue;  // stepped over by the next iteration
    seen |= 1u << i;
    od::value& v = f.value();
    bool ok = true;
    switch (i) {
      case kModel: ok = read_text(v, info.model, false); break;  // "" is the model the client named
      case kStream: ok = read_bool(v, info.stream); break;
      case kStreamOptions:
        ok = read_member(v, "include_usage", [&](od::value& u) { return read_bool(u, info.usage_requested); });
        break;
      case kPreviousResponseId: ok = read_text(v, info.previous_response_id); break;
      case kUser: ok = read_text(v, info.user); break;
      case kSafetyIdentifier: ok = read_text(v, info.safety_identifier); break;
      case kMetadata:
        ok = read_member(v, "user_id", [&](od::value& u) { return read_text(u, info.metadata_user_id); });
        break;
      case kMaxCompletionTokens:
      case kMaxTokens:
      case kMaxOutputTokens: ok = read_count(v, limits[i - kMaxCompletionTokens]); break;
      default: break;
    }
    if (!ok) return false;
  }
  for (const auto& limit : limits) {
    if (limit) {
      info.max_tokens = limit;
      break;
    }
  }
  return true;
}

static_assert(kRequestBodyPadding >= simdjson::SIMDJSON_PADDING);

// The reading of `size` bytes at `data`, of which `room` (at least size + SIMDJSON_PADDING) may be read.
RequestInfo inspect_padded(std::string_view path, const char* data, std::size_t size, std::size_t room) {
  RequestInfo info;
  info.operation = operation_for_path(path);
  if (size == 0) return info;
  thread_local od::parser parser;
  od::document doc;
  if (parser.iterate(data, size, room).get(doc) != simdjson::SUCCESS) return info;
  od::object top;
  if (doc.get_object().get(top) != simdjson::SUCCESS) return info;
  RequestInfo read;
  read.operation = info.operation;
  if (!read_members(top, read)) return info;
  // Nothing may follow the root object.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return info;
  read.json = true;
  return read;
}

}  // namespace

RequestInfo inspect_request(std::string_view path, std::string_view body) {
  // On-Demand reads past a document's end (SIMDJSON_PADDING bytes): the body is copied where there
  // is room for that, as a DOM parse copies it too.
  thread_local std::string padded;
  padded.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  padded.assign(body);
  return inspect_padded(path, padded.data(), padded.size(), padded.capacity());
}

RequestInfo inspect_request_in_place(std::string_view path, const std::string& body) {
  if (body.capacity() < body.size() + simdjson::SIMDJSON_PADDING) return inspect_request(path, std::string_view(body));
  return inspect_padded(path, body.data(), body.size(), body.capacity());
}

}  // namespace mpo::openai
