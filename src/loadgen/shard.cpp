// The shard's share of a point's load (loadgen/shard.hpp). Pure.
#include "loadgen/shard.hpp"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace mpo::loadgen {
namespace {

std::optional<int> whole(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<Shard> parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  const auto index = slash == std::string_view::npos ? std::nullopt : whole(text.substr(0, slash));
  const auto count = slash == std::string_view::npos ? std::nullopt : whole(text.substr(slash + 1));
  if (!index || !count || *count < 1 || *count > kMaxShards || *index < 0 || *index >= *count) {
    return make_error(errc::kSweepShard, fmt::format("--shard {}: expected I/N with 0 <= I < N <= {} (I counts from 0, "
                                                     "as Kubernetes' JOB_COMPLETION_INDEX does)",
                                                     text, kMaxShards));
  }
  return Shard{*index, *count};
}

std::int64_t shard_concurrency(std::int64_t c, const Shard& s) { return c / s.count + (s.index < c % s.count ? 1 : 0); }

}  // namespace mpo::loadgen
