// The implementation of openai/chunk.hpp. Reading OpenAI-compatible payloads for timing and
// accounting: the kind of each streamed chunk (does it carry generated content?), usage, ids and
// errors; the same for a whole non-streamed body; and what a request asks for.
#include "openai/chunk.hpp"

#include <simdjson.h>

#include <array>

#include "openai/api_events.hpp"
#include "openai/chunk_scan.hpp"
#include "openai/payload_fields.hpp"

namespace mpo::openai {
namespace {

using detail::element;
using detail::int_field;
using detail::str;

// A key known at compile time: compared with a constant length, so that the comparison compiles to
// a few loads (a loop over keys given at run time cost a quarter more, issue 43).
template <std::size_t N>
struct MemberKey {
  char text[N];
  constexpr MemberKey(const char (&s)[N]) {  // NOLINT: implicit from a string literal, by design
    for (std::size_t i = 0; i < N; ++i) text[i] = s[i];
  }
  constexpr std::string_view view() const { return {text, N - 1}; }
};

// The members `Keys` of `o` into `slots` (in the same order), each the first of its key (as a lookup
// by key finds it), found in one pass (issue 43: a lookup by key per member was a scan of the
// object each).
template <MemberKey... Keys>
void find_members(simdjson::dom::object o, const std::array<std::optional<element>*, sizeof...(Keys)>& slots) {
  for (const auto field : o) {
    const std::string_view k = field.key;
    std::size_t i = 0;
    const auto take = [&](std::string_view key) {
      std::optional<element>& slot = *slots[i++];
      if (k != key) return false;
      if (!slot) slot = field.value;
      return true;
    };
    (take(Keys.view()) || ...);
  }
}

// A usage object's counts.
Usage read_usage_object(simdjson::dom::object u) {
  std::optional<element> prompt, completion, total, prompt_details, completion_details;
  find_members<"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
               "completion_tokens_details">(u, {&prompt, &completion, &total, &prompt_details, &completion_details});
  Usage out;
  out.prompt_tokens = detail::count_of(prompt);
  out.completion_tokens = detail::count_of(completion);
  out.total_tokens = detail::count_of(total);
  if (prompt_details && prompt_details->is_object()) {
    out.cached_prompt_tokens = int_field(*prompt_details, "cached_tokens");
  }
  if (completion_details && completion_details->is_object()) {
    out.reasoning_tokens = int_field(*completion_details, "reasoning_tokens");
  }
  return out;
}

// The top-level members a payload is read by (a lookup by key per member was a tenth of the
// proxy's instructions per event).
struct TopMembers {
  std::optional<element> timings, metrics, type, object, model, id, usage, error, choices;
};

TopMembers top_members(simdjson::dom::object o) {
  TopMembers m;
  find_members<"id", "type", "model", "usage", "error", "object", "timings", "metrics", "choices">(
      o, {&m.id, &m.type, &m.model, &m.usage, &m.error, &m.object, &m.timings, &m.metrics, &m.choices});
  return m;
}

// A member's string, "" when absent or not a string.
std::string_view string_of(const std::optional<element>& e) {
  std::string_view v;
  if (!e || e->get_string().get(v) != simdjson::SUCCESS) return {};
  return v;
}

// A string element's emptiness: a non-string counts as empty.
bool non_empty(const std::optional<element>& e) { return !string_of(e).empty(); }

// The members of one choice, and of its delta (stream) or message (whole body), that decide its
// kind: each found in one pass over its object, the first of a key given twice as a lookup by key
// finds it (issue 43: ten lookups by key, each a scan of the object, per choice).
struct ChoiceMembers {
  std::optional<element> text, delta, message, finish_reason, index;
  explicit ChoiceMembers(element choice) {
    simdjson::dom::object o;
    if (choice.get_object().get(o) != simdjson::SUCCESS) return;
    find_members<"text", "delta", "message", "finish_reason", "index">(
        o, {&text, &delta, &message, &finish_reason, &index});
  }
};

struct BodyMembers {
  std::optional<element> content, reasoning_content, reasoning, tool_calls, refusal, role;
  explicit BodyMembers(simdjson::dom::object o) {
    find_members<"content", "reasoning_content", "reasoning", "tool_calls", "refusal", "role">(
        o, {&content, &reasoning_content, &reasoning, &tool_calls, &refusal, &role});
  }
};

// The kind of one choice's delta (stream) or message (whole body).
ChunkKind kind_of_choice(const ChoiceMembers& c) {
  detail::ChoiceFacts f;
  f.text = non_empty(c.text);
  const std::optional<element>& d = c.delta ? c.delta : c.message;
  f.body = d.has_value();
  simdjson::dom::object body;
  f.body_is_object = f.body && d->get_object().get(body) == simdjson::SUCCESS;
  if (f.body_is_object) {
    const BodyMembers m(body);
    f.content = non_empty(m.content);
    f.reasoning = non_empty(m.reasoning_content) || non_empty(m.reasoning);
    simdjson::dom::array calls;
    f.tool_calls = m.tool_calls && m.tool_calls->get_array().get(calls) == simdjson::SUCCESS && calls.size() > 0;
    f.refusal = non_empty(m.refusal);
    f.role = non_empty(m.role);
  }
  return detail::choice_kind(f);
}

PayloadInfo read_payload(std::string_view text, IdWanted id_wanted = IdWanted::kYes) {
  PayloadInfo info;
  thread_local simdjson::dom::parser parser;
  element root;
  simdjson::dom::object members;
  if (parser.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS ||
      root.get_object().get(members) != simdjson::SUCCESS) {
    info.kind = ChunkKind::kUnparsable;
    return info;
  }
  const TopMembers top = top_members(members);
  for (const auto* t : {&top.timings, &top.metrics}) {  // llama.cpp puts them in every API's payloads
    if (*t && (*t)->is_object()) info.server_timings = simdjson::minify(**t);
  }
  // The Responses and Anthropic Messages APIs say what each payload is in `type`; chat and
  // completions chunks have none.
  const std::string_view type = string_of(top.type);
  if (type.starts_with("response.")) {
    detail::read_responses_event(root, type, info);
    return info;
  }
  if (detail::is_messages_event(type)) {
    detail::read_messages_event(root, type, info);
    return info;
  }
  if (type == "error") {
    detail::read_error_event(root, info);
    return info;
  }
  if (type == "message") {
    detail::read_messages_body(root, info);
    return info;
  }
  const std::string_view object = string_of(top.object);
  if (object == "response") {
    detail::read_responses_body(root, info);
    return info;
  }
  info.model = std::string(string_of(top.model));
  if (id_wanted == IdWanted::kYes) info.id = std::string(string_of(top.id));
  simdjson::dom::object usage;
  if (top.usage && top.usage->get_object().get(usage) == simdjson::SUCCESS) info.usage = read_usage_object(usage);
  if (top.error && !top.error->is_null()) {
    const element err = *top.error;
    info.kind = ChunkKind::kError;
    if (err.is_object()) {
      info.error_type = std::string(str(err, "type"));
      info.error_message = std::string(str(err, "message"));
    } else if (err.is_string()) {
      info.error_message = std::string(string_of(top.error));
    }
    return info;
  }
  if (object == "error") {  // older vLLM: {"object":"error","message":..,"type":..}
    info.kind = ChunkKind::kError;
    info.error_type = std::string(type);
    info.error_message = std::string(str(root, "message"));
    return info;
  }
  simdjson::dom::array choices;
  if (!top.choices || top.choices->get_array().get(choices) != simdjson::SUCCESS || choices.size() == 0) {
    info.kind = info.usage ? ChunkKind::kUsageOnly : ChunkKind::kEmpty;
    info.final_usage = info.usage.has_value();
    info.unknown_event = !type.empty();  // a typed event of no API we know
    return info;
  }
  info.choices = static_cast<int>(choices.size());
  ChunkKind best = ChunkKind::kEmpty;
  bool first = true;
  for (element c : choices) {
    const ChoiceMembers choice(c);
    const ChunkKind k = kind_of_choice(choice);
    if (detail::outranks(k, best)) best = k;
    if (first) {
      info.finish_reason = std::string(string_of(choice.finish_reason));
      std::int64_t n = 0;
      if (choice.index && choice.index->get_int64().get(n) == simdjson::SUCCESS) {
        info.first_choice_index = choice_index_of(n);
      }
    }
    first = false;
  }
  info.kind = best;
  return info;
}

}  // namespace

namespace detail {

ChunkKind choice_kind(const ChoiceFacts& f) {
  if (f.text) return ChunkKind::kContent;
  if (!f.body_is_object) return ChunkKind::kEmpty;
  if (f.content) return ChunkKind::kContent;
  if (f.reasoning) return ChunkKind::kReasoning;
  if (f.tool_calls) return ChunkKind::kToolCalls;
  if (f.refusal) return ChunkKind::kRefusal;
  if (f.role) return ChunkKind::kRoleOnly;
  return ChunkKind::kEmpty;
}

bool outranks(ChunkKind a, ChunkKind b) {
  const auto rank = [](ChunkKind k) {
    switch (k) {
      case ChunkKind::kContent: return 0;
      case ChunkKind::kReasoning: return 1;
      case ChunkKind::kToolCalls: return 2;
      case ChunkKind::kRefusal: return 3;
      case ChunkKind::kRoleOnly: return 4;
      default: return 5;
    }
  };
  return rank(a) < rank(b);
}

}  // namespace detail

std::string_view to_string(ChunkKind k) {
  switch (k) {
    case ChunkKind::kContent: return "content";
    case ChunkKind::kReasoning: return "reasoning";
    case ChunkKind::kToolCalls: return "tool_calls";
    case ChunkKind::kRefusal: return "refusal";
    case ChunkKind::kRoleOnly: return "role_only";
    case ChunkKind::kEmpty: return "empty";
    case ChunkKind::kUsageOnly: return "usage_only";
    case ChunkKind::kError: return "error";
    case ChunkKind::kDone: return "done";
    case ChunkKind::kUnparsable: return "unparsable";
  }
  return "unparsable";
}

PayloadInfo classify_chunk_fully(std::string_view data) {
  if (data == "[DONE]") {
    PayloadInfo done;
    done.kind = ChunkKind::kDone;
    return done;
  }
  return read_payload(data);
}

PayloadInfo classify_chunk(std::string_view data, IdWanted id) {
  if (id == IdWanted::kYes) return classify_chunk_fully(data);
  if (data == "[DONE]") return classify_chunk_fully(data);
  return read_payload(data, id);
}

PayloadInfo parse_response_body(std::string_view body) { return read_payload(body); }

std::string_view to_string(Operation op) {
  switch (op) {
    case Operation::kChat: return "chat";
    case Operation::kTextCompletion: return "text_completion";
    case Operation::kEmbeddings: return "embeddings";
    case Operation::kResponses: return "responses";
    case Operation::kMessages: return "messages";
    case Operation::kRerank: return "rerank";
    case Operation::kScore: return "score";
    case Operation::kModels: return "models";
    case Operation::kOther: return "other";
  }
  return "other";
}

Operation operation_for_path(std::string_view path) {
  const auto q = path.find('?');
  if (q != std::string_view::npos) path = path.substr(0, q);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto ends = [&](std::string_view s) { return path.size() >= s.size() && path.substr(path.size() - s.size()) == s; };
  if (ends("/chat/completions")) return Operation::kChat;
  if (ends("/completions")) return Operation::kTextCompletion;
  if (ends("/embeddings")) return Operation::kEmbeddings;
  if (ends("/responses")) return Operation::kResponses;
  if (ends("/messages")) return Operation::kMessages;
  if (ends("/rerank")) return Operation::kRerank;
  if (ends("/score")) return Operation::kScore;
  if (ends("/models")) return Operation::kModels;
  return Operation::kOther;
}

// inspect_request: openai/request_inspect.cpp.

}  // namespace mpo::openai
