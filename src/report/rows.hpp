// What the report keeps of each ledger record: the group it falls in (under --by), its outcome and
// token source (interned), and the numbers the statistics, the fit, the ranking and the charts
// read. 104 bytes, about a sixth of a LedgerRecord, so a million lines stay in memory cheaply.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ledger/reader.hpp"

namespace mpo::report {

enum class GroupBy { kModel, kBackend, kOperation, kPath, kSweepPoint };
// The --by names, in the enum's order (parse, text and HTML all read this one table).
inline constexpr const char* kGroupByNames[] = {"model", "backend", "operation", "path", "sweep_point"};
static_assert(sizeof(kGroupByNames) / sizeof(kGroupByNames[0]) == static_cast<int>(GroupBy::kSweepPoint) + 1);
inline const char* group_by_name(GroupBy b) { return kGroupByNames[static_cast<int>(b)]; }

// An optional number in the space of the number: a reserved value (NaN, INT64_MIN) means "absent",
// with std::optional's reading interface. Rows are a million strong; this halves them.
template <typename T>
class Maybe {
 public:
  Maybe() = default;
  Maybe(const std::optional<T>& v) : v_(v ? *v : none()) {}  // NOLINT(google-explicit-constructor)
  explicit operator bool() const { return has_value(); }
  bool has_value() const {
    if constexpr (std::is_floating_point_v<T>)
      return v_ == v_;  // NaN is absent
    else
      return v_ != none();
  }
  T operator*() const { return v_; }
  T value_or(T fallback) const { return has_value() ? v_ : fallback; }

 private:
  static constexpr T none() {
    if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::quiet_NaN();
    else
      return std::numeric_limits<T>::min();
  }
  T v_ = none();
};

// The ledger's operations the report tells apart; a row keeps an index into this table.
inline constexpr const char* kOperationNames[] = {
    "chat",   "text_completion", "responses", "messages", "embeddings",
    "rerank", "score",           "models",    "other",    "(unknown operation)"};
std::uint8_t operation_index(const std::optional<std::string_view>& operation);
inline constexpr std::uint8_t kOtherOperation = 8;  // "other": a path of no API the proxy reads
static_assert(std::string_view(kOperationNames[kOtherOperation]) == "other");
inline const char* operation_name(std::uint8_t i) { return kOperationNames[i]; }

// The group of a request that names no model and got no answer (group_key under GroupBy::kModel).
inline constexpr std::string_view kUnknownModel = "(unknown model)";

// The few distinct short names rows carry (outcomes, token sources, timing bases), each kept once
// for the whole process and named in a row by a one-byte index: a row reads them without its
// table. Safe from several threads. A ledger with more than 255 distinct names (none seen) reads
// "(other name)" for the rest.
class RowNames {
 public:
  static constexpr std::uint8_t kOk = 1;  // "ok" is always index 1
  static std::uint8_t index(std::string_view name);
  static std::string_view name(std::uint8_t index);
};

// A row does not hold its group's key: the table lists rows by group (groups()).
struct Row {
  // How the proxy's loop spent the wait of the line's latest read, when that read was late: the
  // ledger's proxy_lag_quiet_ms against proxy_lag_ms (report/proxy_stalls.hpp).
  static constexpr std::uint8_t kLagQuietUnknown = 0, kLagBusy = 1, kLagHeldUp = 2;
  bool stream : 1 = false;
  std::uint8_t operation : 4 = 0;  // index into kOperationNames
  std::uint8_t lag_quiet : 2 = kLagQuietUnknown;
  // It stopped at its length limit (finish_reason length, max_output_tokens or max_tokens) with
  // fewer tokens, as the server counted them, than the max_tokens it asked for: something else cut
  // it (the engine's context).
  bool cut_short : 1 = false;
  std::uint8_t outcome_index = 0, token_source_index = 0, timing_basis_index = 0;  // RowNames
  // The sweep's load point ("concurrency=8") as an index into the table's phase names (0: the line
  // names none).
  std::uint16_t phase = 0;
  // The request's turn in its conversation (docs/FORMATS.md "Sessions"); 0: the line names none.
  // Clamped to kMaxTurn (14 bits, beside the next flags: a row's size is the report's memory).
  static constexpr std::uint16_t kMaxTurn = 16383;
  std::uint16_t turn : 14 = 0;
  // Streamed, and its first generated event was a tool call: the engine held back the tokens before
  // the function's name, so the line dates no first token (its TTFT and TPOT are left out; the
  // engine's own times stand in where the line has them: docs/REPORT.md "Tool calls first").
  bool tool_call_first : 1 = false;
  // Streamed, ok, and it ended without a generated event although the engine counted tokens for it
  // (report/analysis.hpp kNoOutputMeaning: an answer ended at once, unstreamed reasoning, a tool call
  // cut before its name, of which llama.cpp b10309 sends nothing). No TTFT or TPOT.
  bool no_output : 1 = false;
  std::string_view outcome() const { return RowNames::name(outcome_index); }            // "ok", "http_error", ...
  std::string_view token_source() const { return RowNames::name(token_source_index); }  // "usage", "none", ...
  // "kernel_rx", "loop"; "" when the line does not say (sweep, fak, older)
  std::string_view timing_basis() const { return RowNames::name(timing_basis_index); }
  bool ok() const { return outcome_index == RowNames::kOk; }
  std::int64_t started_at_us = 0;
  Maybe<std::int64_t> ended_at_us;
  Maybe<double> ttft_ms, tpot_ms, itl_p95_ms, e2e_ms, ttfb_ms, proxy_lag_ms;
  // When the bytes of the proxy's latest read arrived, ms after the start (report/proxy_stalls.hpp).
  Maybe<float> proxy_lag_at_ms;
  // Clamped to +-(2^31 - 1): no request counts more tokens.
  Maybe<std::int32_t> prompt_tokens, completion_tokens, cached_prompt_tokens;
  Maybe<std::int32_t> in_flight_at_start;  // clamped to 2^31 - 1 (no proxy holds more)
  // The engine's own prefill time for this request (llama.cpp's timings.prompt_ms), where the line
  // carries it: the report splits TTFT at it (docs/REPORT.md "Evidence from the engine").
  Maybe<float> engine_prompt_ms;
  // ... and its own decode time (timings.predicted_ms, from its first token to its last): with the
  // prefill, what stands in for TTFT and TPOT where the request was not streamed.
  Maybe<float> engine_predicted_ms;
  // Its median gap between output chunks: its own decode pace, against which a long gap stands out
  // (report/interference.hpp).
  Maybe<float> itl_p50_ms;
};
static_assert(sizeof(Row) == 104, "a row's size is the report's memory: keep it (rows.hpp)");
static_assert(std::size(kOperationNames) <= 16, "Row::operation holds an index into kOperationNames in 4 bits");

// A late read's wait was held up, not busy, when the proxy's loop read nothing at all for at least
// this share of it (docs/REPORT.md "The proxy's own lateness").
inline constexpr double kHeldUpShare = 0.5;
inline std::uint8_t lag_quiet_of(double lag_ms, double quiet_ms) {
  return quiet_ms >= kHeldUpShare * lag_ms ? Row::kLagHeldUp : Row::kLagBusy;
}

// llama.cpp's `timings.prompt_ms` in a line's server_timings object; nullopt when absent.
std::optional<float> timings_prompt_ms(std::string_view server_timings);
// The same for any of its numbers in ms: `key` is the member's `"name":` text ("\"predicted_ms\":").
std::optional<float> timings_ms(std::string_view server_timings, std::string_view key);
// One of its counts ("\"draft_n\":"): a whole number in [0, 2^31); nullopt otherwise.
std::optional<std::int32_t> timings_count(std::string_view server_timings, std::string_view key);

// Requests that generate (chat, completions, responses, messages, and any other that produced a
// token) are what the report's groups analyse and rank. The others (embeddings, rerank, score,
// models, health checks, ...) have no TTFT and no decode: they get their own statistics and are
// never ranked.
bool generating(const Row& r);

// The group a record belongs to under `by` (a view into the record).
std::string_view group_key(const ledger::LedgerRecordView& r, GroupBy by);

// Allocates blocks of 1 MiB and more (row segments, analysis columns) on 2 MiB-aligned memory,
// rounded up to whole huge pages and marked for transparent huge pages (where the kernel offers
// them only on request): a million rows then fault in ~60 pages, not ~30,000. A first touch of a
// 4 KiB page costs about as much as 12 us on this project's CI machine.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(std::size_t n);
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

// A row's conversation (a hash of its session_id), for the rows whose line names one.
using SessionIndex = std::unordered_map<const Row*, std::uint64_t>;

// The draft tokens an engine that decodes speculatively proposed for a request and those it accepted
// (llama.cpp's timings.draft_n and draft_n_accepted; report/speculation.hpp), for the rows whose
// line says (a row has no room for them, and most engines draft nothing).
struct DraftCounts {
  std::int32_t drafted = 0, accepted = 0;
};
using DraftIndex = std::unordered_map<const Row*, DraftCounts>;

// What a failed request's line says of its failure (a row has no room for it, and most rows are
// ok): the HTTP status (0: none), the error's type and message (interned; a message cut at
// kFailureMessageBytes, and empty once a table holds kFailureMessagesKept distinct ones: a ledger of
// a million failures, each message naming its own token count, stays small).
struct FailureDetail {
  int http_status = 0;
  std::string_view error_type, error_message;
};
using FailureIndex = std::unordered_map<const Row*, FailureDetail>;
inline constexpr std::size_t kFailureMessageBytes = 240;
inline constexpr std::size_t kFailureMessagesKept = 512;

// Rows of one group by address, in the order added. A million of them take 8 MB: on huge pages, as
// the rows are.
using RowList = std::vector<const Row*, HugePageAllocator<const Row*>>;

class RowTable {
 public:
  explicit RowTable(GroupBy by = GroupBy::kModel) : by_(by) {}
  RowTable(RowTable&&) noexcept = default;
  RowTable& operator=(RowTable&&) noexcept = default;

  // The view's strings are interned: it need not outlive the call.
  void add(const ledger::LedgerRecordView& r);
  void add(const ledger::LedgerRecord& r) { add(ledger::view_of(r)); }
  // Appends `other`'s rows (same GroupBy) without copying them: its segments and the strings its
  // rows point at move along.
  void append(RowTable&& other);
  // Appends each part in turn, each group's row list sized once for all of them.
  void append(std::vector<RowTable>&& parts);
  std::size_t size() const;
  // `sweep` warm-up lines: left out of every group and statistic, counted here.
  std::size_t warmup_lines() const { return warmup_lines_; }
  GroupBy by() const { return by_; }
  // Every generating row's address by group, in the order added (rows never move once added).
  const std::map<std::string_view, RowList>& groups() const { return groups_; }
  // The non-generating rows, by operation.
  const std::map<std::string_view, RowList>& others() const { return others_; }
  // A row's phase name ("" for index 0).
  std::string_view phase_name(std::uint16_t i) const { return i < phases_.size() ? phases_[i] : std::string_view(); }
  // The conversation of each row whose line names one, as a 64-bit hash of its session_id (a row
  // has no room for it): what links a turn to the turn before it (report/turns.hpp).
  const SessionIndex& sessions() const { return sessions_; }
  // The status, error type and message of each row whose outcome is not ok.
  const FailureIndex& failures() const { return failures_; }
  // The draft counts of each row whose line carries them.
  const DraftIndex& drafts() const { return drafts_; }
  // Every row, in the order added.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& seg : segments_) {
      for (const Row& r : seg) f(r);
    }
  }

 private:
  using Segment = std::vector<Row, HugePageAllocator<Row>>;
  Segment& current();
  std::string_view intern(std::string_view s, std::string_view& last);
  void add_failure(const Row* row, const ledger::LedgerRecordView& r);
  std::uint16_t phase_index(std::string_view interned);
  GroupBy by_;
  std::size_t warmup_lines_ = 0;
  std::vector<Segment> segments_;
  std::map<std::string_view, RowList> groups_, others_;
  RowList* last_bucket_ = nullptr;
  const char* last_group_key_ = nullptr;      // interned: equal keys share one address
  std::string_view last_group_, last_phase_;  // most rows repeat the previous ones
  // The previous row's names and their indexes (RowNames), for the same reason.
  std::string_view last_outcome_, last_source_, last_basis_;
  std::uint8_t last_outcome_index_ = 0, last_source_index_ = 0, last_basis_index_ = 0;
  std::vector<std::string_view> phases_{std::string_view()};  // interned names; [0] is "none"
  std::map<std::string_view, std::uint16_t> phase_indexes_;
  std::uint16_t last_phase_index_ = 0;
  // Interned strings; a deque never moves its elements, and the unique_ptr keeps it in place.
  std::vector<std::unique_ptr<std::deque<std::string>>> storage_;
  SessionIndex sessions_;
  FailureIndex failures_;
  DraftIndex drafts_;
  std::size_t failure_messages_ = 0;  // distinct messages interned (kFailureMessagesKept)
  std::string_view last_failure_type_, last_failure_message_;
  std::unordered_set<std::string_view> interned_;
};

RowTable rows_from(const std::vector<ledger::LedgerRecord>& records, GroupBy by);

}  // namespace mpo::report
