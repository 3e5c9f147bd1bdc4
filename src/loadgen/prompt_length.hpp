// Token-exact prompts (issue 38; docs/SWEEP.md "Prompt lengths"). `--input-tokens 64` gave prompts
// of 177-192 tokens on the Llama tokenizer: a synthetic prompt's four-letter words are about three
// tokens each there, and the chat template adds its own. The engine's own tokenizer counts each
// prompt as it will (template included), and the prompt's words are cut or padded until that count
// is the one asked for. Edge: it asks the server, through the load generator's connection.
//
// Routes (documented by the engines): vLLM's `POST /tokenize` with `messages` answers `count` with
// the chat template applied; llama.cpp's `POST /apply-template` gives the templated prompt and its
// `POST /tokenize` (`add_special`, `parse_special`) the tokens its chat endpoint counts (checked
// against llama.cpp b10309's own usage.prompt_tokens). The Responses and Messages APIs' input is
// templated as chat's is (both engines turn it into chat messages); the completions API's prompt
// (the messages joined, no template) is counted as a prompt: vLLM's `/tokenize` with `prompt`,
// llama.cpp's `/tokenize` alone. A server with neither keeps the words as they are (about one token
// per word), and the receipt says so.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "loadgen/api.hpp"
#include "loadgen/driver.hpp"
#include "loadgen/workload.hpp"

namespace mpo::loadgen {

class EngineTokenizer {
 public:
  EngineTokenizer(Driver& driver, std::string model, Api api = Api::kChat)
      : driver_(driver), model_(std::move(model)), api_(api) {}

  // Finds the route the server offers and names it; an error that says none answered.
  boost::asio::awaitable<Result<std::string>> find();
  // The prompt tokens the server counts for these messages as the API sends them (chat's template
  // included, or the completions API's joined prompt).
  boost::asio::awaitable<Result<std::int64_t>> count(const std::vector<Message>& messages);
  std::size_t calls() const { return calls_; }

 private:
  enum class Route { kNone, kVllm, kLlamaCpp };
  Driver& driver_;
  std::string model_;
  Api api_;
  Route route_ = Route::kNone;
  std::size_t calls_ = 0;
};

// Fits the prompts of requests to their `prompt_tokens_estimate` (the length asked for), as the
// server counts them: the words of each request's last message after its first `keep_words`
// (the shared prefix and the point's marker) are cut, then single-token words are added. A request
// whose fit was found before (by id) starts from it, so later points cost one count each.
class PromptFitter {
 public:
  explicit PromptFitter(EngineTokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // Words (`text`: a shared prefix, a conversation's message) cut or padded with single-token words
  // until they alone count `target` tokens as the server counts a message of them (the template's
  // own tokens, a message of one single-token word less that word, left out); the nearest below
  // when the padding cannot land on it. `--shared-prefix-tokens 600` made of words was 1,600
  // tokens on Llama's tokenizer.
  boost::asio::awaitable<Result<std::string>> fit_to_tokens(const std::string& text, std::int64_t target);
  // A conversation's messages (multi-turn workloads, whose prompts are not fitted whole: a fitted
  // turn would no longer be the next turn's prefix): each distinct message of synthetic words cut or
  // padded to as many tokens as it has words (the length it was drawn with), the same text wherever
  // it recurs, so every turn still begins with the turn before it. A tool call's arguments are
  // left as they are. The number of distinct messages fitted.
  boost::asio::awaitable<Result<std::size_t>> fit_messages(std::vector<ServingRequest>& requests);
  // The count each request reached (the target, or the nearest below it when the padding cannot
  // land on it exactly).
  boost::asio::awaitable<Result<std::vector<std::int64_t>>> fit(std::vector<ServingRequest>& requests,
                                                                std::size_t keep_words);

 private:
  struct Fit {
    std::size_t own_words = 0;  // words kept after keep_words
    std::size_t pads = 0;       // single-token words appended
  };
  boost::asio::awaitable<Result<std::int64_t>> fit_one(ServingRequest& r, std::size_t keep_words);
  EngineTokenizer& tokenizer_;
  std::map<std::string, Fit> fits_;
};

// The last message's text built from its first `keep + own` words and `pads` single-token words (pure).
std::string fitted_text(const std::vector<std::string>& words, std::size_t keep, std::size_t own, std::size_t pads);

}  // namespace mpo::loadgen
