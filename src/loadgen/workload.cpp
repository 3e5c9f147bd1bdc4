// The implementation of loadgen/workload.hpp. The requests a sweep sends, and their digest.
#include "loadgen/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/go_json.hpp"
#include "core/json.hpp"

namespace mpo::loadgen {
namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// A JSON array document, or JSONL (one object per non-empty line). Errors name the line.
Result<std::vector<boost::json::object>> parse_objects(std::string_view text, std::string_view what) {
  std::vector<boost::json::object> out;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return make_error(errc::kWorkloadEmpty, fmt::format("the {} file is empty", what));
  }
  if (text[first] == '[') {
    auto doc = parse_exact_json(text);
    if (!doc) return make_error(errc::kWorkloadJson, fmt::format("{} file: {}", what, doc.error().message));
    std::size_t i = 0;
    for (const auto& item : doc->as_array()) {
      ++i;
      if (!item.is_object()) {
        return make_error(errc::kWorkloadJson, fmt::format("{} file: element {} is not an object", what, i));
      }
      out.push_back(item.as_object());
    }
    return out;
  }
  std::size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    ++line_no;
    const std::string line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) continue;
    auto doc = parse_exact_json(line);
    if (!doc || !doc->is_object()) {
      return make_error(errc::kWorkloadJson, fmt::format("{} file, line {}: not a JSON object{}", what, line_no,
                                                         doc ? "" : " (" + doc.error().message + ")"));
    }
    out.push_back(std::move(doc->as_object()));
  }
  return out;
}

std::string string_field(const boost::json::object& o, std::string_view key) {
  if (auto v = json_string(o, key)) return std::string(*v);
  if (auto v = json_int(o, key)) return std::to_string(*v);
  return {};
}

}  // namespace

std::int64_t draw_length(const LengthDistribution& d, std::mt19937_64& rng) {
  double v = d.a;
  switch (d.kind) {
    case LengthDistribution::Kind::kConstant: break;
    case LengthDistribution::Kind::kUniform: v = std::uniform_real_distribution<double>(d.a, d.b)(rng); break;
    case LengthDistribution::Kind::kNormal: v = std::normal_distribution<double>(d.a, d.b)(rng); break;
    case LengthDistribution::Kind::kExponential: v = std::exponential_distribution<double>(1.0 / d.a)(rng); break;
  }
  return std::max<std::int64_t>(1, std::llround(v));
}

std::int64_t estimate_tokens(std::string_view text) { return static_cast<std::int64_t>(text.size() / 4); }

Result<std::vector<ServingRequest>> parse_web_tasks(std::string_view text, const WebTaskOptions& opts) {
  auto objects = parse_objects(text, "web-task");
  if (!objects) return objects.error();
  if (objects->empty()) return make_error(errc::kWorkloadEmpty, "the web-task file holds no tasks");
  std::vector<ServingRequest> tasks;
  for (std::size_t i = 0; i < objects->size(); ++i) {
    const auto& o = (*objects)[i];
    ServingRequest r;
    r.id = string_field(o, "id");
    if (r.id.empty()) {
      return make_error(errc::kWorkloadField, fmt::format("web task {} has no \"id\"", i + 1));
    }
    const std::string description = string_field(o, "description");
    const std::string instructions = string_field(o, "instructions");
    std::string task = trim(description + "\n" + instructions);
    if (task.empty()) task = r.id;
    r.messages = {{"system", opts.shared_prefix}, {"user", "Task: " + task}};
    r.max_output_tokens = opts.max_output_tokens;
    const std::int64_t d = estimate_tokens(description), n = estimate_tokens(instructions);
    r.prompt_tokens_estimate = 3000 + ((d + n) == 0 ? 400 : d + n);
    tasks.push_back(std::move(r));
  }
  const std::size_t agents = opts.agents == 0 ? tasks.size() : opts.agents;
  return take_requests(tasks, agents);
}

std::vector<ServingRequest> take_requests(const std::vector<ServingRequest>& base, std::size_t n) {
  std::vector<ServingRequest> out;
  if (base.empty()) return out;
  out.reserve(n);
  const bool repeat = n > base.size();
  for (std::size_t i = 0; i < n; ++i) {
    ServingRequest r = base[i % base.size()];
    if (repeat) r.id += fmt::format("#agent-{:03}", i + 1);
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<ServingRequest>> parse_sharegpt(std::string_view text, const ShareGptOptions& opts) {
  auto objects = parse_objects(text, "conversations");
  if (!objects) return objects.error();
  std::vector<ServingRequest> out;
  for (std::size_t i = 0; i < objects->size(); ++i) {
    if (opts.limit != 0 && out.size() >= opts.limit) break;
    const auto& o = (*objects)[i];
    const auto* turns = json_array(o, "conversations");
    if (turns == nullptr) {
      return make_error(errc::kWorkloadField, fmt::format("conversation {} has no \"conversations\" array", i + 1));
    }
    if (turns->empty() || !(*turns)[0].is_object()) continue;
    const auto& first = (*turns)[0].as_object();
    const std::string from = string_field(first, "from");
    if (from != "human" && from != "user") continue;
    ServingRequest r;
    r.id = string_field(o, "id");
    if (r.id.empty()) r.id = fmt::format("conversation-{}", i + 1);
    const std::string prompt = string_field(first, "value");
    r.messages = {{"user", prompt}};
    r.prompt_tokens_estimate = std::max<std::int64_t>(1, estimate_tokens(prompt));
    std::int64_t reply = 0;
    if (turns->size() > 1 && (*turns)[1].is_object()) {
      reply = estimate_tokens(string_field((*turns)[1].as_object(), "value"));
    }
    r.max_output_tokens =
        opts.max_output_tokens > 0 ? opts.max_output_tokens : std::clamp<std::int64_t>(reply, 1, opts.output_cap);
    out.push_back(std::move(r));
  }
  if (out.empty()) {
    return make_error(errc::kWorkloadEmpty,
                      "the conversations file holds no conversation that starts "
                      "with a human turn");
  }
  return out;
}

Result<LengthDistribution> parse_length_distribution(std::string_view text) {
  auto bad = [&] {
    return make_error(errc::kWorkloadDistribution, fmt::format("'{}' is not a length distribution: use N, uniform:A,B, "
                                                               "normal:MEAN,SD or exp:MEAN (token counts)",
                                                               text));
  };
  auto number = [](std::string_view s, double& out) {
    try {
      std::size_t used = 0;
      out = std::stod(std::string(s), &used);
      return used == s.size() && std::isfinite(out);
    } catch (...) {
      return false;
    }
  };
  LengthDistribution d;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    if (!number(text, d.a) || d.a < 1) return bad();
    return d;
  }
  const std::string_view kind = text.substr(0, colon), args = text.substr(colon + 1);
  const auto comma = args.find(',');
  if (kind == "exp") {
    d.kind = LengthDistribution::Kind::kExponential;
    if (comma != std::string_view::npos || !number(args, d.a) || d.a <= 0) return bad();
    return d;
  }
  if (comma == std::string_view::npos) return bad();
  if (!number(args.substr(0, comma), d.a) || !number(args.substr(comma + 1), d.b)) return bad();
  if (kind == "uniform") {
    d.kind = LengthDistribution::Kind::kUniform;
    if (d.a < 1 || d.b < d.a) return bad();
  } else if (kind == "normal") {
    d.kind = LengthDistribution::Kind::kNormal;
    if (d.a < 1 || d.b < 0) return bad();
  } else {
    return bad();
  }
  return d;
}

std::string to_string(const LengthDistribution& d) {
  switch (d.kind) {
    case LengthDistribution::Kind::kConstant: return fmt::format("{}", d.a);
    case LengthDistribution::Kind::kUniform: return fmt::format("uniform:{},{}", d.a, d.b);
    case LengthDistribution::Kind::kNormal: return fmt::format("normal:{},{}", d.a, d.b);
    case LengthDistribution::Kind::kExponential: return fmt::format("exp:{}", d.a);
  }
  return {};
}

std::string synthetic_words(std::int64_t tokens, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out;
  out.reserve(static_cast<std::size_t>(tokens) * 5);
  for (std::int64_t i = 0; i < tokens; ++i) {
    if (i != 0) out.push_back(' ');
    const std::uint64_t x = rng();
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>('a' + (x >> (k * 8)) % 26));
  }
  return out;
}

std::vector<ServingRequest> synthetic_workload(const SyntheticOptions& opts) {
  std::mt19937_64 rng(opts.seed);
  const std::string prefix =
      opts.shared_prefix_tokens > 0 ? synthetic_words(opts.shared_prefix_tokens, opts.seed ^ 0x5eed) : "";
  std::vector<ServingRequest> out;
  out.reserve(opts.count);
  for (std::size_t i = 0; i < opts.count; ++i) {
    ServingRequest r;
    r.id = fmt::format("synthetic-{:06}", i + 1);
    const std::int64_t input = draw_length(opts.input, rng);
    const std::int64_t output = draw_length(opts.output, rng);
    const std::int64_t own = std::max<std::int64_t>(1, input - opts.shared_prefix_tokens);
    std::string prompt = synthetic_words(own, rng());
    if (!prefix.empty()) prompt = prefix + " " + prompt;
    r.messages = {{"user", std::move(prompt)}};
    r.max_output_tokens = output;
    r.prompt_tokens_estimate = std::max(input, opts.shared_prefix_tokens + own);
    out.push_back(std::move(r));
  }
  return out;
}

Replay replay_ledger(std::vector<ledger::LedgerRecord> records, std::uint64_t seed) {
  std::stable_sort(records.begin(), records.end(),
                   [](const auto& a, const auto& b) { return a.started_at_us < b.started_at_us; });
  Replay out;
  std::optional<std::int64_t> t0;
  std::mt19937_64 rng(seed);
  for (const auto& rec : records) {
    if (!rec.prompt_tokens || !rec.completion_tokens || *rec.prompt_tokens < 1 || *rec.completion_tokens < 1) {
      ++out.skipped;
      continue;
    }
    if (!t0) t0 = rec.started_at_us;
    ServingRequest r;
    r.id = rec.observation_id.empty() ? fmt::format("replay-{:06}", out.requests.size() + 1)
                                      : "replay-" + rec.observation_id;
    // The chat template of common servers adds a few tokens; the prompt text carries the rest.
    r.messages = {{"user", synthetic_words(std::max<std::int64_t>(1, *rec.prompt_tokens - 8), rng())}};
    r.max_output_tokens = *rec.completion_tokens;
    r.prompt_tokens_estimate = *rec.prompt_tokens;
    r.arrival_offset_s = static_cast<double>(rec.started_at_us - *t0) / 1e6;
    out.requests.push_back(std::move(r));
  }
  return out;
}

boost::json::value workload_json(const std::vector<ServingRequest>& requests) {
  boost::json::array list;
  list.reserve(requests.size());
  for (const auto& r : requests) {
    boost::json::array messages;
    for (const auto& m : r.messages) {
      boost::json::object mo;
      mo["role"] = m.role;
      mo["content"] = m.content;
      // Members fak's workloads never have are written only when set, so their digests stay fak's.
      if (!m.tool_name.empty()) mo["tool_name"] = m.tool_name;
      if (!m.tool_call_id.empty()) mo["tool_call_id"] = m.tool_call_id;
      messages.push_back(std::move(mo));
    }
    boost::json::object o;
    o["id"] = r.id;
    o["messages"] = std::move(messages);
    o["max_output_tokens"] = r.max_output_tokens;
    o["prompt_tokens_estimate"] = r.prompt_tokens_estimate;
    if (!r.session_id.empty()) {
      o["session_id"] = r.session_id;
      o["turn"] = r.turn;
      o["think_time_s"] = r.think_time_s;
    }
    if (r.declares_tool) o["tools"] = boost::json::array{kToolName};
    if (r.requires_tool_call) o["tool_choice"] = "required";
    list.push_back(std::move(o));
  }
  return list;
}

std::string workload_digest(const std::vector<ServingRequest>& requests) {
  return sha256_digest(go_marshal(workload_json(requests)));
}

namespace {

// Byte offsets where each space-separated word of `text` starts.
std::vector<std::size_t> word_starts(std::string_view text) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != ' ' && (i == 0 || text[i - 1] == ' ')) out.push_back(i);
  }
  return out;
}

std::string_view word_at(std::string_view text, std::size_t start) {
  const auto end = text.find(' ', start);
  return text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

// The message a request's point marker goes in: the last one, or for a session's turn the first
// user message, which every turn of the session repeats unchanged (marking the last would make each
// turn differ from the next one's copy of it, and the session's prefix would no longer be cached).
std::size_t marked_message(const ServingRequest& r) {
  if (r.turn > 0) {
    for (std::size_t i = 0; i < r.messages.size(); ++i) {
      if (r.messages[i].role == "user") return i;
    }
  }
  return r.messages.size() - 1;
}

}  // namespace

std::size_t shared_leading_words(const std::vector<ServingRequest>& requests) {
  if (requests.empty() || requests.front().messages.empty()) return 0;
  const std::string& first = requests.front().messages[marked_message(requests.front())].content;
  const auto starts = word_starts(first);
  std::size_t n = starts.size();
  for (const auto& r : requests) {
    if (r.messages.empty()) return 0;
    const std::string& text = r.messages[marked_message(r)].content;
    const auto other = word_starts(text);
    std::size_t k = 0;
    while (k < n && k < other.size() && word_at(first, starts[k]) == word_at(text, other[k])) ++k;
    n = k;
  }
  return n;
}

std::string point_marker(std::size_t point_index, bool warmup) {
  return fmt::format("{}{:03}", warmup ? 'w' : 'p', point_index);
}

void mark_prompts(std::vector<ServingRequest>& requests, std::size_t shared_words, std::string_view marker) {
  for (auto& r : requests) {
    if (!r.session_id.empty() && !marker.empty()) r.session_id += "." + std::string(marker);
    if (r.messages.empty()) continue;
    std::string& text = r.messages[marked_message(r)].content;
    const auto starts = word_starts(text);
    if (shared_words < starts.size()) {
      const std::size_t at = starts[shared_words];
      text.replace(at, word_at(text, at).size(), marker);
    } else {
      text += text.empty() ? std::string(marker) : " " + std::string(marker);
    }
  }
}

std::string shared_prefix_text(const ServingRequest& r, std::size_t shared_words) {
  if (r.messages.empty()) return {};
  const std::string& text = r.messages[marked_message(r)].content;
  const auto starts = word_starts(text);
  if (shared_words == 0) return {};
  if (shared_words >= starts.size()) return text;
  const std::size_t end = starts[shared_words - 1] + word_at(text, starts[shared_words - 1]).size();
  return text.substr(0, end);
}

void replace_shared_prefix(std::vector<ServingRequest>& requests, std::size_t shared_words, std::string_view prefix) {
  for (auto& r : requests) {
    if (r.messages.empty()) continue;
    std::string& text = r.messages[marked_message(r)].content;
    const std::size_t old_size = shared_prefix_text(r, shared_words).size();
    text.replace(0, old_size, prefix);
  }
}

double declared_shared_share(const ServingRequest& r, std::size_t shared_words) {
  std::size_t total = 0, shared = 0;
  for (std::size_t i = 0; i < r.messages.size(); ++i) {
    const std::string& text = r.messages[i].content;
    total += text.size();
    if (i + 1 < r.messages.size()) {
      shared += text.size();
      continue;
    }
    const auto starts = word_starts(text);
    shared += shared_words < starts.size() ? starts[shared_words] : text.size();
  }
  return total == 0 ? 0 : static_cast<double>(shared) / static_cast<double>(total);
}

}  // namespace mpo::loadgen
