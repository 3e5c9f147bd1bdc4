// The implementation of sim/response_store.hpp: stored responses for `previous_response_id`.
#include "sim/response_store.hpp"

#include <fmt/format.h>

namespace mpo::sim {

void ResponseStore::put(const std::string& id, std::vector<TokenId> conversation) {
  if (capacity_ == 0) return;
  if (auto it = by_id_.find(id); it != by_id_.end()) {
    it->second = std::move(conversation);
    return;
  }
  while (by_id_.size() >= capacity_ && !order_.empty()) {
    by_id_.erase(order_.front());
    order_.pop_front();
  }
  by_id_.emplace(id, std::move(conversation));
  order_.push_back(id);
}

const std::vector<TokenId>* ResponseStore::find(std::string_view id) const {
  const auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : &it->second;
}

std::string response_not_found_message(std::string_view id) {
  return fmt::format("Response with id '{}' not found.", id);
}

}  // namespace mpo::sim
