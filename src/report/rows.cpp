// The implementation of report/rows.hpp. What the report keeps of each ledger record: the group it
// falls in (under --by), its outcome and token source (interned), and the numbers the statistics,
// the fit, the ranking and the charts read.
#include "report/rows.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>

#include "ledger/observation.hpp"

namespace mpo::report {

std::string_view group_key(const ledger::LedgerRecordView& r, GroupBy by) {
  switch (by) {
    case GroupBy::kModel: return r.model ? *r.model : r.response_model ? *r.response_model : kUnknownModel;
    case GroupBy::kBackend: return r.backend ? *r.backend : "(unknown backend)";
    case GroupBy::kOperation: return r.operation ? *r.operation : "(unknown operation)";
    case GroupBy::kPath: {
      const std::string_view p = r.path ? *r.path : "(unknown path)";
      return p.substr(0, p.find('?'));
    }
    case GroupBy::kSweepPoint: return r.sweep_point ? *r.sweep_point : "(not a sweep)";
  }
  return "";
}

std::uint8_t operation_index(const std::optional<std::string_view>& operation) {
  constexpr std::uint8_t kUnknown = std::size(kOperationNames) - 1;
  if (!operation) return kUnknown;
  for (std::uint8_t i = 0; i < kUnknown; ++i) {
    if (*operation == kOperationNames[i]) return i;
  }
  return kUnknown - 1;  // an operation of a later version: "other"
}

namespace {

// A value a float cannot hold (a damaged ledger) is absent: converting it would be undefined.
std::optional<float> as_float(const std::optional<double>& v) {
  if (!v || !(std::abs(*v) <= 1e30)) return std::nullopt;
  return static_cast<float>(*v);
}

std::optional<std::int32_t> as_count(const std::optional<std::int64_t>& v) {
  if (!v) return std::nullopt;
  constexpr std::int64_t kMost = std::numeric_limits<std::int32_t>::max();
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(*v, -kMost, kMost));
}

// Index 0 is "" (a line that does not say), 1 "ok"; 255 stands for every name past the 254th.
struct NameTable {
  static constexpr std::uint8_t kOverflow = 255;
  std::mutex mutex;                 // taken only to add a name
  std::deque<std::string> storage;  // never moves its elements
  std::array<std::string_view, 256> names{};
  std::atomic<unsigned> count{2};  // names[0, count) are written before count covers them
  NameTable() {
    names[RowNames::kOk] = "ok";
    names[kOverflow] = "(other name)";
  }
};

NameTable& table() {
  static NameTable t;
  return t;
}

}  // namespace

std::uint8_t RowNames::index(std::string_view name) {
  NameTable& t = table();
  if (name.empty()) return 0;
  auto find = [&t, name](unsigned n) -> int {
    for (unsigned i = 1; i < n; ++i) {
      if (t.names[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  if (const int i = find(t.count.load(std::memory_order_acquire)); i >= 0) return static_cast<std::uint8_t>(i);
  std::lock_guard lock(t.mutex);
  const unsigned n = t.count.load(std::memory_order_relaxed);
  if (const int i = find(n); i >= 0) return static_cast<std::uint8_t>(i);
  if (n >= NameTable::kOverflow) return NameTable::kOverflow;
  t.names[n] = t.storage.emplace_back(name);
  t.count.store(n + 1, std::memory_order_release);
  return static_cast<std::uint8_t>(n);
}

std::string_view RowNames::name(std::uint8_t index) { return table().names[index]; }

bool generating(const Row& r) {
  // By index into kOperationNames (checked below against the names).
  constexpr std::uint8_t kEmbeddings = 4, kRerank = 5, kScore = 6, kModels = 7, kOther = 8;
  static_assert(
      std::string_view(kOperationNames[kEmbeddings]) == "embeddings" &&
      std::string_view(kOperationNames[kRerank]) == "rerank" && std::string_view(kOperationNames[kScore]) == "score" &&
      std::string_view(kOperationNames[kModels]) == "models" && std::string_view(kOperationNames[kOther]) == "other");
  if (r.operation >= kEmbeddings && r.operation <= kModels) return false;
  if (r.operation == kOther) return r.ttft_ms.has_value() || r.completion_tokens.value_or(0) > 0;
  return true;
}

// Rows go into segments of a fixed capacity: a full segment is never copied to grow.
template <typename T>
T* HugePageAllocator<T>::allocate(std::size_t n) {
  constexpr std::size_t kHuge = 2u << 20;
  const std::size_t bytes = n * sizeof(T);
  if (bytes < kHuge / 2) {  // smaller than half a huge page: not worth rounding up
    if (void* p = std::malloc(bytes)) return static_cast<T*>(p);
    throw std::bad_alloc();
  }
  const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (!p) throw std::bad_alloc();
  ::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP it is plain memory
  return static_cast<T*>(p);
}
template struct HugePageAllocator<Row>;
template struct HugePageAllocator<const Row*>;
template struct HugePageAllocator<double>;
template struct HugePageAllocator<std::pair<std::int64_t, std::int64_t>>;

RowTable::Segment& RowTable::current() {
  constexpr std::size_t kSegmentRows = 1u << 16;
  if (segments_.empty() || segments_.back().size() == segments_.back().capacity()) {
    segments_.emplace_back();
    segments_.back().reserve(kSegmentRows);
  }
  return segments_.back();
}

std::size_t RowTable::size() const {
  std::size_t n = 0;
  for (const auto& seg : segments_) n += seg.size();
  return n;
}

std::string_view RowTable::intern(std::string_view s, std::string_view& last) {
  if (!last.empty() && s == last) return last;
  if (auto it = interned_.find(s); it != interned_.end()) return last = *it;
  if (storage_.empty()) storage_.push_back(std::make_unique<std::deque<std::string>>());
  const std::string& kept = storage_.back()->emplace_back(s);
  return last = *interned_.insert(std::string_view(kept)).first;
}

std::optional<float> timings_prompt_ms(std::string_view t) { return timings_ms(t, "\"prompt_ms\":"); }

namespace {

// The text of `key`'s value in `t`, spaces after the key skipped; "" where `key` is not there. Found
// with glibc's memmem: string_view::find stops at every byte equal to the key's first, and a
// timings object is mostly quoted keys (issue 25: 1.1k instructions a line for "draft_n" against
// about 0.1k).
std::string_view value_after(std::string_view t, std::string_view key) {
  const void* at = ::memmem(t.data(), t.size(), key.data(), key.size());
  if (at == nullptr) return {};
  std::string_view v = t.substr(static_cast<std::size_t>(static_cast<const char*>(at) - t.data()) + key.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  return v;
}

}  // namespace

std::optional<float> timings_ms(std::string_view t, std::string_view key) {
  const std::string_view v = value_after(t, key);
  double n = 0;
  const auto [stop, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || stop == v.data() || !(n >= 0) || n > 1e9) return std::nullopt;
  return static_cast<float>(n);
}

std::optional<std::int32_t> timings_count(std::string_view t, std::string_view key) {
  const std::string_view v = value_after(t, key);
  const char* end = v.data() + v.size();
  std::int32_t n = 0;
  const auto [stop, ec] = std::from_chars(v.data(), end, n);
  if (v.empty() || ec != std::errc{} || stop == v.data() || n < 0 ||
      (stop < end && (*stop == '.' || *stop == 'e' || *stop == 'E')))
    return std::nullopt;
  return n;
}

void RowTable::add(const ledger::LedgerRecordView& r) {
  if (r.warmup) {  // a sweep's warm-up request measures nothing (issue 38: --by sweep_point counted them)
    ++warmup_lines_;
    return;
  }
  const std::string_view group = intern(group_key(r, by_), last_group_);
  Row row{.stream = r.stream,
          .operation = operation_index(r.operation),
          .started_at_us = r.started_at_us,
          .ended_at_us = r.ended_at_us,
          .ttft_ms = r.ttft_ms,
          .tpot_ms = r.tpot_ms,
          .itl_p95_ms = r.itl_p95_ms,
          .e2e_ms = r.e2e_ms,
          .ttfb_ms = r.ttfb_ms,
          .proxy_lag_ms = r.proxy_lag_ms,
          .proxy_lag_at_ms = as_float(r.proxy_lag_at_ms),
          .prompt_tokens = as_count(r.prompt_tokens),
          .completion_tokens = as_count(r.completion_tokens),
          .cached_prompt_tokens = as_count(r.cached_prompt_tokens),
          .itl_p50_ms = as_float(r.itl_p50_ms)};
  if (r.stream && ledger::began_with_tool_call(r.first_output)) {
    row.tool_call_first = true;
    row.ttft_ms = {};
    row.tpot_ms = {};
  }
  if (r.proxy_lag_ms && r.proxy_lag_quiet_ms) row.lag_quiet = lag_quiet_of(*r.proxy_lag_ms, *r.proxy_lag_quiet_ms);
  // Most rows repeat the previous row's names: compare with those before asking the shared table.
  auto name_index = [](std::string_view name, std::string_view& last, std::uint8_t& last_index) {
    if (last_index == 0 || name != last) {
      last_index = RowNames::index(name);
      last = RowNames::name(last_index);
    }
    return last_index;
  };
  row.outcome_index = name_index(r.outcome, last_outcome_, last_outcome_index_);
  row.token_source_index = name_index(r.token_source, last_source_, last_source_index_);
  if (r.timing_basis) row.timing_basis_index = name_index(*r.timing_basis, last_basis_, last_basis_index_);
  // Our lines only (fak's may leave TTFT out for no reason the line says); a stream on a path of no
  // API the proxy reads has no first event it could date: not this.
  row.no_output = r.stream && r.source_schema == ledger::kObservationSchema && row.operation != kOtherOperation &&
                  !row.tool_call_first && !r.ttft_ms && r.completion_tokens.value_or(0) > 0 && row.ok();
  row.cut_short = ledger::answer_cut_short(r.finish_reason, r.max_tokens, r.completion_tokens, r.token_source);
  if (r.sweep_point) {
    const auto name = intern(*r.sweep_point, last_phase_);
    if (last_phase_index_ == 0 || phases_[last_phase_index_].data() != name.data())
      last_phase_index_ = phase_index(name);
    row.phase = last_phase_index_;
  }
  if (r.turn && *r.turn > 0) row.turn = static_cast<std::uint16_t>(std::min<std::int64_t>(*r.turn, Row::kMaxTurn));
  if (r.in_flight_at_start) {
    row.in_flight_at_start = std::optional<std::int32_t>(static_cast<std::int32_t>(
        std::clamp<std::int64_t>(*r.in_flight_at_start, 0, std::numeric_limits<std::int32_t>::max())));
  }
  if (r.server_timings) {
    row.engine_prompt_ms = timings_prompt_ms(*r.server_timings);
    row.engine_predicted_ms = timings_ms(*r.server_timings, "\"predicted_ms\":");
  }
  Segment& seg = current();
  seg.push_back(row);  // within capacity: no row ever moves
  const Row* added = &seg.back();
  if (r.session_id && row.turn > 0) sessions_.emplace(added, std::hash<std::string_view>{}(*r.session_id));
  if (!added->ok()) add_failure(added, r);
  if (r.server_timings) {
    if (const auto drafted = timings_count(*r.server_timings, "\"draft_n\":")) {
      drafts_.emplace(added,
                      DraftCounts{*drafted, timings_count(*r.server_timings, "\"draft_n_accepted\":").value_or(0)});
    }
  }
  if (!generating(*added)) {
    others_[operation_name(added->operation)].push_back(added);
    return;
  }
  if (!last_bucket_ || group.data() != last_group_key_) {
    last_bucket_ = &groups_[group];
    last_group_key_ = group.data();
  }
  last_bucket_->push_back(added);
}

namespace {

// The first `n` bytes of `s` or fewer, never cutting a UTF-8 sequence in two.
std::string_view cut_text(std::string_view s, std::size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

void RowTable::add_failure(const Row* row, const ledger::LedgerRecordView& r) {
  FailureDetail d;
  d.http_status = r.http_status.value_or(0);
  if (r.error_type) d.error_type = intern(cut_text(*r.error_type, kFailureMessageBytes), last_failure_type_);
  if (r.error_message && !r.error_message->empty()) {
    const std::string_view m = cut_text(*r.error_message, kFailureMessageBytes);
    if (interned_.count(m) || failure_messages_ < kFailureMessagesKept) {
      const std::size_t before = interned_.size();
      d.error_message = intern(m, last_failure_message_);
      failure_messages_ += interned_.size() - before;
    }
  }
  failures_.emplace(row, d);
}

std::uint16_t RowTable::phase_index(std::string_view interned) {
  const auto [it, fresh] = phase_indexes_.emplace(interned, static_cast<std::uint16_t>(phases_.size()));
  if (fresh) {
    if (phases_.size() == UINT16_MAX) {  // 65,535 load points in one ledger: the rest share the last
      phase_indexes_.erase(it);
      return UINT16_MAX - 1;
    }
    phases_.push_back(interned);
  }
  return it->second;
}

void RowTable::append(RowTable&& other) {
  warmup_lines_ += std::exchange(other.warmup_lines_, 0);
  if (other.phases_.size() > 1) {
    // The other table numbered its phases itself: renumber its rows into ours (its strings move
    // to our storage below, so the names stay valid).
    std::vector<std::uint16_t> remap(other.phases_.size(), 0);
    for (std::size_t i = 1; i < other.phases_.size(); ++i) remap[i] = phase_index(other.phases_[i]);
    for (auto& seg : other.segments_) {
      for (Row& r : seg) r.phase = remap[r.phase];
    }
  }
  for (auto& seg : other.segments_) {
    if (!seg.empty()) segments_.push_back(std::move(seg));  // moves the buffer: row addresses stay
  }
  for (auto& [key, rows] : other.groups_) {
    auto& mine = groups_[key];
    if (mine.empty())
      mine = std::move(rows);
    else
      mine.insert(mine.end(), rows.begin(), rows.end());
  }
  other.groups_.clear();
  for (auto& [key, rows] : other.others_) {
    auto& mine = others_[key];
    mine.insert(mine.end(), rows.begin(), rows.end());
  }
  other.others_.clear();
  last_bucket_ = nullptr;
  for (auto& s : other.storage_) storage_.push_back(std::move(s));
  sessions_.merge(other.sessions_);
  failures_.merge(other.failures_);
  drafts_.merge(other.drafts_);
  failure_messages_ += std::exchange(other.failure_messages_, 0);
  // Rows of `other` point into its storage (now ours); later add() calls intern into a fresh deque
  // and start a fresh segment, so row order stays the order added.
  interned_.clear();
  storage_.push_back(std::make_unique<std::deque<std::string>>());
  last_group_ = last_phase_ = last_failure_type_ = last_failure_message_ = {};
  last_phase_index_ = 0;
  other.segments_.clear();
}

void RowTable::append(std::vector<RowTable>&& parts) {
  std::map<std::string_view, std::size_t> totals;
  for (const auto& [key, rows] : groups_) totals[key] += rows.size();
  for (const RowTable& part : parts) {
    for (const auto& [key, rows] : part.groups_) totals[key] += rows.size();
  }
  for (RowTable& part : parts) {
    // Where this part starts a group, its row list becomes the group's, with room for the rest.
    for (auto& [key, rows] : part.groups_) {
      if (groups_.count(key) == 0) rows.reserve(totals[key]);
    }
    append(std::move(part));
  }
  parts.clear();
}

RowTable rows_from(const std::vector<ledger::LedgerRecord>& records, GroupBy by) {
  RowTable t(by);
  for (const auto& r : records) t.add(r);
  return t;
}

}  // namespace mpo::report
