// The implementation of loadgen/prompt_length.hpp. Token-exact prompts (issue 38; docs/SWEEP.md
// "Prompt lengths").
#include "loadgen/prompt_length.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>

#include "core/json.hpp"

namespace mpo::loadgen {
namespace {

namespace json = boost::json;

// A word the common tokenizers (Llama's SentencePiece, GPT's BPE, and `simulate`) count as one
// token after a space.
constexpr const char* kPadWord = "a";
constexpr int kMaxPadRounds = 3;
// Guesses interpolated from the bracket's counts before the search halves it (fit_one).
constexpr int kInterpolations = 6;

json::array messages_json(const std::vector<Message>& messages) {
  json::array out;
  for (const auto& m : messages) out.push_back(json::object{{"role", m.role}, {"content", m.content}});
  return out;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ' ') ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// The request bodies, built outside the coroutines (GCC 12 mishandles braced temporaries there).
std::string vllm_tokenize_body(const std::string& model, const std::vector<Message>& messages) {
  return json::serialize(
      json::object{{"model", model}, {"messages", messages_json(messages)}, {"add_generation_prompt", true}});
}
std::string vllm_prompt_body(const std::string& model, const std::string& prompt) {
  return json::serialize(json::object{{"model", model}, {"prompt", prompt}});
}
std::string template_body(const std::vector<Message>& messages) {
  return json::serialize(json::object{{"messages", messages_json(messages)}});
}
std::string llamacpp_tokenize_body(std::string_view prompt) {
  return json::serialize(json::object{{"content", prompt}, {"add_special", true}, {"parse_special", true}});
}

std::vector<Message> probe_messages() { return {Message{"user", "hello"}}; }

std::string answer(int status, const std::string& body) {
  if (status == 0) return body;
  return fmt::format("HTTP {}", status);
}

}  // namespace

std::string fitted_text(const std::vector<std::string>& words, std::size_t keep, std::size_t own, std::size_t pads) {
  std::string out;
  const std::size_t n = std::min(words.size(), keep + own);
  for (std::size_t i = 0; i < n; ++i) {
    if (!out.empty()) out.push_back(' ');
    out += words[i];
  }
  for (std::size_t i = 0; i < pads; ++i) {
    if (!out.empty()) out.push_back(' ');
    out += kPadWord;
  }
  return out;
}

boost::asio::awaitable<Result<std::string>> EngineTokenizer::find() {
  const std::vector<Message> probe = probe_messages();
  route_ = Route::kVllm;
  const bool prompt = api_ == Api::kCompletions;
  auto vllm = co_await count(probe);
  if (vllm) {
    co_return std::string(prompt ? "vLLM POST /tokenize (prompt)"
                                 : "vLLM POST /tokenize (messages, the chat template applied)");
  }
  route_ = Route::kLlamaCpp;
  auto llamacpp = co_await count(probe);
  if (llamacpp) {
    co_return std::string(prompt ? "llama.cpp POST /tokenize (add_special, parse_special)"
                                 : "llama.cpp POST /apply-template + POST /tokenize (add_special, parse_special)");
  }
  route_ = Route::kNone;
  co_return make_error(errc::kSweepTokenize,
                       fmt::format("the server offers no tokenizer route this sweep knows ({}; {})",
                                   vllm.error().message, llamacpp.error().message));
}

boost::asio::awaitable<Result<std::int64_t>> EngineTokenizer::count(const std::vector<Message>& messages) {
  ++calls_;
  const bool as_prompt = api_ == Api::kCompletions;
  if (route_ == Route::kVllm) {
    std::string body =
        as_prompt ? vllm_prompt_body(model_, completions_prompt(messages)) : vllm_tokenize_body(model_, messages);
    auto [status, text] = co_await driver_.post_json_admin("/tokenize", std::move(body));
    const auto doc = parse_json(text);
    if (status == 200 && doc && doc->is_object()) {
      if (auto n = json_int(doc->as_object(), "count")) co_return *n;
    }
    co_return make_error(errc::kSweepTokenize, fmt::format("POST /tokenize ({}): {}", as_prompt ? "prompt" : "messages",
                                                           answer(status, text)));
  }
  if (route_ == Route::kLlamaCpp) {
    std::optional<std::string> prompt;
    if (as_prompt) {
      prompt = completions_prompt(messages);
    } else {
      std::string templ = template_body(messages);
      auto [status, text] = co_await driver_.post_json_admin("/apply-template", std::move(templ));
      const auto doc = parse_json(text);
      if (status == 200 && doc && doc->is_object()) prompt = json_string(doc->as_object(), "prompt");
      if (!prompt) co_return make_error(errc::kSweepTokenize, "POST /apply-template: " + answer(status, text));
    }
    std::string body = llamacpp_tokenize_body(*prompt);
    auto [st, tokens_text] = co_await driver_.post_json_admin("/tokenize", std::move(body));
    const auto tokens = parse_json(tokens_text);
    const auto* list = st == 200 && tokens && tokens->is_object() ? json_array(tokens->as_object(), "tokens") : nullptr;
    if (list == nullptr) co_return make_error(errc::kSweepTokenize, "POST /tokenize: " + answer(st, tokens_text));
    co_return static_cast<std::int64_t>(list->size());
  }
  co_return make_error(errc::kSweepTokenize, "no tokenizer route");
}

boost::asio::awaitable<Result<std::string>> PromptFitter::fit_to_tokens(const std::string& text, std::int64_t target) {
  const std::vector<std::string> words = split_words(text);
  auto count_of = [&](std::size_t own, std::size_t pads) -> boost::asio::awaitable<Result<std::int64_t>> {
    std::vector<Message> m{Message{"user", fitted_text(words, 0, own, pads)}};
    auto c = co_await tokenizer_.count(m);
    co_return c;
  };
  auto one = co_await count_of(0, 1);  // the template and one single-token word
  if (!one) co_return one.error();
  const std::int64_t overhead = *one - 1;
  // The most words whose count stays at or under the target (the count grows with the words).
  std::size_t lo = 0, hi = words.size();
  auto all = co_await count_of(hi, 0);
  if (!all) co_return all.error();
  if (*all - overhead <= target) {
    lo = hi;
  } else {
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      auto c = co_await count_of(mid, 0);
      if (!c) co_return c.error();
      (*c - overhead <= target ? lo : hi) = mid;
    }
  }
  // Then single-token words for what is missing, corrected by what the count says.
  std::size_t pads = 0;
  auto c = co_await count_of(lo, 0);
  if (!c) co_return c.error();
  std::int64_t tokens = lo == 0 ? 0 : *c - overhead;
  for (int round = 0; round < kMaxPadRounds && tokens < target; ++round) {
    const std::size_t more = pads + static_cast<std::size_t>(target - tokens);
    auto cp = co_await count_of(lo, more);
    if (!cp) co_return cp.error();
    if (*cp - overhead > target) break;
    pads = more;
    tokens = *cp - overhead;
  }
  co_return fitted_text(words, 0, lo, pads);
}

boost::asio::awaitable<Result<std::size_t>> PromptFitter::fit_messages(std::vector<ServingRequest>& requests) {
  std::map<std::string, std::string> fitted;  // each distinct text, fitted
  for (const auto& r : requests) {
    for (const auto& m : r.messages) {
      if (m.tool_name.empty() && !m.content.empty()) fitted.emplace(m.content, std::string());
    }
  }
  for (auto& [text, out] : fitted) {
    auto f = co_await fit_to_tokens(text, static_cast<std::int64_t>(split_words(text).size()));
    if (!f) co_return f.error();
    out = std::move(*f);
  }
  for (auto& r : requests) {
    for (auto& m : r.messages) {
      if (const auto it = fitted.find(m.content); m.tool_name.empty() && it != fitted.end()) m.content = it->second;
    }
  }
  co_return fitted.size();
}

boost::asio::awaitable<Result<std::vector<std::int64_t>>> PromptFitter::fit(std::vector<ServingRequest>& requests,
                                                                            std::size_t keep_words) {
  std::vector<std::int64_t> out;
  out.reserve(requests.size());
  for (auto& r : requests) {
    auto c = co_await fit_one(r, keep_words);
    if (!c) co_return c.error();
    out.push_back(*c);
  }
  co_return out;
}

boost::asio::awaitable<Result<std::int64_t>> PromptFitter::fit_one(ServingRequest& r, std::size_t keep_words) {
  const std::int64_t target = r.prompt_tokens_estimate;
  if (r.messages.empty() || target <= 0) co_return target;
  const std::vector<std::string> words = split_words(r.messages.back().content);
  const std::size_t keep = std::min(keep_words, words.size());
  const std::size_t avail = words.size() - keep;
  auto count_of = [&](std::size_t own, std::size_t pads) -> boost::asio::awaitable<Result<std::int64_t>> {
    std::vector<Message> m = r.messages;
    m.back().content = fitted_text(words, keep, own, pads);
    auto c = co_await tokenizer_.count(m);
    co_return c;
  };
  // Pads, each about one token: add what is missing, correct by what the count says, and keep the
  // closest count at or under the target. False when no count at or under it was seen.
  auto pad = [&](Fit& f, std::int64_t& c) -> boost::asio::awaitable<Result<bool>> {
    Fit under = f;
    std::int64_t c_under = c <= target ? c : -1;
    for (int round = 0; round < kMaxPadRounds && c != target; ++round) {
      const auto pads = static_cast<std::int64_t>(f.pads) + (target - c);
      if (pads < 0) break;
      auto cp = co_await count_of(f.own_words, static_cast<std::size_t>(pads));
      if (!cp) co_return cp.error();
      f.pads = static_cast<std::size_t>(pads);
      c = *cp;
      if (c <= target && c > c_under) under = f, c_under = c;
    }
    if (c > target && c_under >= 0) f = under, c = c_under;
    co_return c <= target;
  };
  Fit f;
  std::int64_t c = 0;
  bool done = false;
  if (auto it = fits_.find(r.id); it != fits_.end() && it->second.own_words <= avail) {
    // This request's fit at an earlier point: the marker may cost a token more or less.
    f = it->second;
    auto again = co_await count_of(f.own_words, f.pads);
    if (!again) co_return again.error();
    c = *again;
    auto padded = co_await pad(f, c);
    if (!padded) co_return padded.error();
    done = *padded;
  }
  if (!done) {
    // The most words whose count stays at or under the target (binary search: the count grows with
    // the words), then the pads.
    auto all = co_await count_of(avail, 0);
    if (!all) co_return all.error();
    f = Fit{avail, 0};
    c = *all;
    if (c > target) {
      std::size_t lo = 0, hi = avail;
      auto at_lo = co_await count_of(0, 0);
      if (!at_lo) co_return at_lo.error();
      std::int64_t c_lo = *at_lo, c_hi = c;
      // Interpolated, not halved: the count is close to linear in the words, so a guess from the
      // bracket's two counts lands within a word or two, and the next (one word on) closes it; a
      // tokenize call is a round trip to the server. After kInterpolations guesses it halves, as a
      // binary search would: the same number of words either way, since the count grows with them
      // (a sweep's prompts against llama.cpp: 825 calls for 40 prompts before).
      for (int round = 0; hi - lo > 1 && c_lo <= target; ++round) {
        std::size_t mid = lo + (hi - lo) / 2;
        if (round < kInterpolations && c_hi > c_lo) {
          const double share = static_cast<double>(target - c_lo) / static_cast<double>(c_hi - c_lo);
          mid = std::clamp(lo + static_cast<std::size_t>(share * static_cast<double>(hi - lo)), lo + 1, hi - 1);
        }
        auto cm = co_await count_of(mid, 0);
        if (!cm) co_return cm.error();
        if (*cm <= target) {
          lo = mid;
          c_lo = *cm;
        } else {
          hi = mid;
          c_hi = *cm;
        }
      }
      f = Fit{lo, 0};
      c = c_lo;
    }
    auto padded = co_await pad(f, c);
    if (!padded) co_return padded.error();
  }
  fits_[r.id] = f;
  r.messages.back().content = fitted_text(words, keep, f.own_words, f.pads);
  co_return c;
}

}  // namespace mpo::loadgen
