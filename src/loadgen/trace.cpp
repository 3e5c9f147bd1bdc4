// The implementation of loadgen/trace.hpp: Mooncake-style traces read, and their prompts built
// block by block.
#include "loadgen/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <random>
#include <set>
#include <unordered_map>

#include "core/go_json.hpp"
#include "core/json.hpp"

namespace mpo::loadgen {
namespace {

// Common English words, each one token (with its leading space) on LLaMA-2's SentencePiece
// vocabulary as llama.cpp b10309 tokenizes it, and in GPT-style BPE vocabularies: 128 of them.
constexpr std::array<const char*, 128> kWords = {
    "the",   "of",      "and",   "to",     "in",      "is",   "that",   "for",   "it",      "as",   "was",    "with",
    "be",    "by",      "on",    "not",    "he",      "this", "are",    "or",    "his",     "from", "at",     "which",
    "but",   "have",    "an",    "had",    "they",    "you",  "were",   "their", "one",     "all",  "we",     "can",
    "her",   "has",     "there", "been",   "if",      "more", "when",   "will",  "would",   "who",  "so",     "no",
    "out",   "up",      "what",  "about",  "into",    "than", "them",   "only",  "other",   "new",  "some",   "could",
    "time",  "these",   "two",   "may",    "then",    "do",   "first",  "any",   "my",      "now",  "such",   "like",
    "our",   "over",    "man",   "me",     "even",    "most", "made",   "after", "also",    "did",  "many",   "before",
    "must",  "through", "back",  "years",  "where",   "much", "your",   "way",   "well",    "down", "should", "because",
    "each",  "just",    "those", "people", "how",     "too",  "little", "state", "good",    "very", "make",   "world",
    "still", "own",     "see",   "men",    "work",    "long", "get",    "here",  "between", "both", "life",   "being",
    "under", "never",   "day",   "same",   "another", "know", "while",  "last"};

// The block of hash id `id`: block_tokens words, the same for the same id and seed.
std::string block_text(std::int64_t id, std::int64_t words, std::uint64_t seed) {
  return single_token_words(words,
                            seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(id) * 0xbf58476d1ce4e5b9ULL);
}

}  // namespace

std::string single_token_words(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)) * 5);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i != 0) out.push_back(' ');
    out += kWords[rng() % kWords.size()];
  }
  return out;
}

namespace {

struct Entry {
  double timestamp_ms = 0;
  std::int64_t input = 0, output = 0;
  std::vector<std::int64_t> hash_ids;
};

// One line's request, or the error that names the line.
Result<Entry> read_entry(std::string_view line, std::size_t line_no, const TraceOptions& opts) {
  const auto where = [&](std::string_view what) {
    return make_error(errc::kWorkloadField, fmt::format("trace line {}: {}", line_no, what));
  };
  auto doc = parse_exact_json(line);
  if (!doc || !doc->is_object()) return where("not a JSON object");
  const auto& o = doc->as_object();
  const auto ts = json_double(o, "timestamp");
  const auto in = json_int(o, "input_length");
  const auto out = json_int(o, "output_length");
  if (!ts || *ts < 0) return where("\"timestamp\" (milliseconds since the first request) is missing or negative");
  if (!in || *in < 1) return where("\"input_length\" is missing or below 1");
  if (*in > opts.max_input_tokens)
    return where(
        fmt::format("\"input_length\" {} is above the {} tokens a prompt may have here", *in, opts.max_input_tokens));
  if (!out || *out < 1) return where("\"output_length\" is missing or below 1");
  Entry e;
  e.timestamp_ms = *ts;
  e.input = *in;
  e.output = *out;
  const std::int64_t needed = (e.input + opts.block_tokens - 1) / opts.block_tokens;
  if (const auto* ids = json_array(o, "hash_ids")) {
    for (const auto& v : *ids) {
      if (!v.is_int64() || v.as_int64() < 0) return where("\"hash_ids\" holds something other than a whole number");
      e.hash_ids.push_back(v.as_int64());
    }
    if (static_cast<std::int64_t>(e.hash_ids.size()) != needed) {
      return where(
          fmt::format("{} hash ids for {} input tokens, where blocks of {} tokens need {} (another block size? "
                      "--trace-block-tokens)",
                      e.hash_ids.size(), e.input, opts.block_tokens, needed));
    }
  }
  return e;
}

// The first `words` words of a block's text.
std::string_view first_words(std::string_view block, std::int64_t words) {
  std::size_t cut = 0;
  for (std::int64_t w = 0; w < words; ++w) cut = block.find(' ', cut) + (w + 1 < words ? 1 : 0);
  return block.substr(0, cut);
}

}  // namespace

Result<Trace> parse_mooncake_trace(std::string_view text, const TraceOptions& opts) {
  if (opts.block_tokens < 1) return make_error(errc::kWorkloadField, "the trace's block size must be at least 1 token");
  std::vector<Entry> entries;
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    ++line_no;
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto entry = read_entry(line, line_no, opts);
    if (!entry) return entry.error();
    entries.push_back(std::move(*entry));
  }
  if (entries.empty()) return make_error(errc::kWorkloadEmpty, "the trace holds no request");
  // Requests without hash ids get blocks of their own, numbered above every id the trace uses.
  std::int64_t next_own = 0;
  for (const auto& e : entries) {
    for (auto id : e.hash_ids) next_own = std::max(next_own, id + 1);
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.timestamp_ms < b.timestamp_ms; });
  Trace trace;
  std::unordered_map<std::int64_t, std::string> blocks;
  std::set<std::int64_t> seen;
  const double t0 = entries.front().timestamp_ms;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto& e = entries[i];
    if (e.hash_ids.empty()) {
      for (std::int64_t b = 0; b * opts.block_tokens < e.input; ++b) e.hash_ids.push_back(next_own++);
    }
    std::string prompt;
    for (std::size_t b = 0; b < e.hash_ids.size(); ++b) {
      const std::int64_t id = e.hash_ids[b];
      auto it = blocks.find(id);
      if (it == blocks.end()) it = blocks.emplace(id, block_text(id, opts.block_tokens, opts.seed)).first;
      ++trace.block_uses;
      if (!seen.insert(id).second) ++trace.shared_blocks;
      // A partial last block is its block's first words.
      const std::int64_t words =
          std::min(opts.block_tokens, e.input - static_cast<std::int64_t>(b) * opts.block_tokens);
      if (!prompt.empty()) prompt.push_back(' ');
      prompt += words < opts.block_tokens ? first_words(it->second, words) : std::string_view(it->second);
    }
    ServingRequest r;
    r.id = fmt::format("trace-{:06}", i + 1);
    r.messages = {{"user", std::move(prompt), {}, {}}};
    r.max_output_tokens = e.output;
    r.prompt_tokens_estimate = e.input;
    r.arrival_offset_s = (e.timestamp_ms - t0) / 1000.0;
    trace.requests.push_back(std::move(r));
  }
  trace.blocks = seen.size();
  return trace;
}

}  // namespace mpo::loadgen
