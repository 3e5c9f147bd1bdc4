// The Responses API's stored responses (`previous_response_id`), as vLLM keeps them with
// VLLM_ENABLE_RESPONSES_API_STORE=1: a request that continues a response is that response's whole
// conversation (its input and its output) followed by the new input, so an engine's prefix cache
// finds the earlier turns. Pure; bounded (the oldest stored response is forgotten first).
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/tokens.hpp"

namespace mpo::sim {

class ResponseStore {
 public:
  explicit ResponseStore(std::size_t capacity = 10'000) : capacity_(capacity) {}
  // `conversation`: the response's prompt tokens followed by the tokens it generated.
  void put(const std::string& id, std::vector<TokenId> conversation);
  // Nullptr when the id was never stored or has been forgotten.
  const std::vector<TokenId>* find(std::string_view id) const;
  std::size_t size() const { return by_id_.size(); }

 private:
  std::size_t capacity_;
  std::unordered_map<std::string, std::vector<TokenId>> by_id_;
  std::deque<std::string> order_;  // oldest first
};

// vLLM's answer to an id it does not hold (404, param "response_id").
std::string response_not_found_message(std::string_view id);

}  // namespace mpo::sim
