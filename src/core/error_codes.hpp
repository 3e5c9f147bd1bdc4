// Every error code of modelperfobs in one table: a named constant for each (a code is never a
// string written at the place it is raised: `make_error` takes only these), what it means, and the
// exit code of a command that stops on it (0 for an error that ends no command: a request answered
// with an HTTP status, a line counted). docs/ERRORS.md lists the table and is checked against it
// (tests/core/error_codes_test.cpp). Pure.
#pragma once

#include <span>
#include <string_view>

namespace mpo {

// A code from the table below; made only from a literal, at compile time.
class ErrorCode {
 public:
  consteval explicit ErrorCode(const char* name) : name_(name) {}
  constexpr std::string_view name() const { return name_; }

 private:
  std::string_view name_;
};

// The codes, named after their text ("sweep.merge" is errc::kSweepMerge).
namespace errc {
inline constexpr ErrorCode kAddressSyntax{"address.syntax"};
inline constexpr ErrorCode kAttributeWindow{"attribute.window"};
inline constexpr ErrorCode kBackendUrl{"backend.url"};
inline constexpr ErrorCode kBandwidthDevice{"bandwidth.device"};
inline constexpr ErrorCode kBandwidthHost{"bandwidth.host"};
inline constexpr ErrorCode kBandwidthHtml{"bandwidth.html"};
inline constexpr ErrorCode kBandwidthPhase{"bandwidth.phase"};
inline constexpr ErrorCode kBandwidthRoofline{"bandwidth.roofline"};
inline constexpr ErrorCode kBandwidthShape{"bandwidth.shape"};
inline constexpr ErrorCode kBandwidthVerify{"bandwidth.verify"};
inline constexpr ErrorCode kBandwidthWindow{"bandwidth.window"};
inline constexpr ErrorCode kCacheStateField{"cache_state.field"};
inline constexpr ErrorCode kCacheStateJson{"cache_state.json"};
inline constexpr ErrorCode kCacheStateLayer{"cache_state.layer"};
inline constexpr ErrorCode kCacheStateMechanism{"cache_state.mechanism"};
inline constexpr ErrorCode kCacheStateMetricsUrl{"cache_state.metrics_url"};
inline constexpr ErrorCode kCacheStateProbe{"cache_state.probe"};
inline constexpr ErrorCode kCacheStateRequest{"cache_state.request"};
inline constexpr ErrorCode kCacheStateScrape{"cache_state.scrape"};
inline constexpr ErrorCode kCacheStateTransition{"cache_state.transition"};
inline constexpr ErrorCode kCacheStateUrl{"cache_state.url"};
inline constexpr ErrorCode kDurationSyntax{"duration.syntax"};
inline constexpr ErrorCode kEngineProps{"engine.props"};
inline constexpr ErrorCode kJsonParse{"json.parse"};
inline constexpr ErrorCode kLedgerFields{"ledger.fields"};
inline constexpr ErrorCode kLedgerFsync{"ledger.fsync"};
inline constexpr ErrorCode kLedgerFull{"ledger.full"};
inline constexpr ErrorCode kLedgerMkdir{"ledger.mkdir"};
inline constexpr ErrorCode kLedgerOpen{"ledger.open"};
inline constexpr ErrorCode kLedgerRead{"ledger.read"};
inline constexpr ErrorCode kNcuCsv{"ncu.csv"};
inline constexpr ErrorCode kNcuDuration{"ncu.duration"};
inline constexpr ErrorCode kNcuHeader{"ncu.header"};
inline constexpr ErrorCode kNcuMetric{"ncu.metric"};
inline constexpr ErrorCode kNcuMixed{"ncu.mixed"};
inline constexpr ErrorCode kNcuUnit{"ncu.unit"};
inline constexpr ErrorCode kNcuValue{"ncu.value"};
inline constexpr ErrorCode kNetTls{"net.tls"};
inline constexpr ErrorCode kOtelConfig{"otel.config"};
inline constexpr ErrorCode kOtelEndpoint{"otel.endpoint"};
inline constexpr ErrorCode kParityJson{"parity.json"};
inline constexpr ErrorCode kParityTrack{"parity.track"};
inline constexpr ErrorCode kProcessArgv{"process.argv"};
inline constexpr ErrorCode kProcessEof{"process.eof"};
inline constexpr ErrorCode kProcessOutput{"process.output"};
inline constexpr ErrorCode kProcessPipe{"process.pipe"};
inline constexpr ErrorCode kProcessSpawn{"process.spawn"};
inline constexpr ErrorCode kProcessTimeout{"process.timeout"};
inline constexpr ErrorCode kProfileJson{"profile.json"};
inline constexpr ErrorCode kProfileRange{"profile.range"};
inline constexpr ErrorCode kProfileType{"profile.type"};
inline constexpr ErrorCode kProfileUnknownKey{"profile.unknown_key"};
inline constexpr ErrorCode kPromtextSyntax{"promtext.syntax"};
inline constexpr ErrorCode kProxyListen{"proxy.listen"};
inline constexpr ErrorCode kProxyOtlp{"proxy.otlp"};
inline constexpr ErrorCode kProxyTls{"proxy.tls"};
inline constexpr ErrorCode kReportBaseline{"report.baseline"};
inline constexpr ErrorCode kReportBy{"report.by"};
inline constexpr ErrorCode kReportInput{"report.input"};
inline constexpr ErrorCode kReportMaxRegression{"report.max_regression"};
inline constexpr ErrorCode kReportSlo{"report.slo"};
inline constexpr ErrorCode kRequestBad{"request.bad"};
inline constexpr ErrorCode kRequestMethod{"request.method"};
inline constexpr ErrorCode kRequestTooLarge{"request.too_large"};
inline constexpr ErrorCode kRequestTransferCoding{"request.transfer_coding"};
inline constexpr ErrorCode kRequestVersion{"request.version"};
inline constexpr ErrorCode kRfc3339Range{"rfc3339.range"};
inline constexpr ErrorCode kRfc3339Syntax{"rfc3339.syntax"};
inline constexpr ErrorCode kScenarioUnknown{"scenario.unknown"};
inline constexpr ErrorCode kScrapeIdentity{"scrape.identity"};
inline constexpr ErrorCode kScrapeLine{"scrape.line"};
inline constexpr ErrorCode kScrapeReset{"scrape.reset"};
inline constexpr ErrorCode kSimContextLength{"sim.context_length"};
inline constexpr ErrorCode kSimEmptyPrompt{"sim.empty_prompt"};
inline constexpr ErrorCode kSimMaxTokens{"sim.max_tokens"};
inline constexpr ErrorCode kSimRequest{"sim.request"};
inline constexpr ErrorCode kStatsEmpty{"stats.empty"};
inline constexpr ErrorCode kStatsQ{"stats.q"};
inline constexpr ErrorCode kSweepCacheReset{"sweep.cache_reset"};
inline constexpr ErrorCode kSweepCompare{"sweep.compare"};
inline constexpr ErrorCode kSweepContract{"sweep.contract"};
inline constexpr ErrorCode kSweepDataset{"sweep.dataset"};
inline constexpr ErrorCode kSweepEvidence{"sweep.evidence"};
inline constexpr ErrorCode kSweepJson{"sweep.json"};
inline constexpr ErrorCode kSweepMerge{"sweep.merge"};
inline constexpr ErrorCode kSweepMetricsUrl{"sweep.metrics_url"};
inline constexpr ErrorCode kSweepPoint{"sweep.point"};
inline constexpr ErrorCode kSweepReplay{"sweep.replay"};
inline constexpr ErrorCode kSweepSample{"sweep.sample"};
inline constexpr ErrorCode kSweepSchema{"sweep.schema"};
inline constexpr ErrorCode kSweepShard{"sweep.shard"};
inline constexpr ErrorCode kSweepStats{"sweep.stats"};
inline constexpr ErrorCode kSweepTokenize{"sweep.tokenize"};
inline constexpr ErrorCode kSweepUrl{"sweep.url"};
inline constexpr ErrorCode kSweepWorkload{"sweep.workload"};
inline constexpr ErrorCode kTraceparentFlags{"traceparent.flags"};
inline constexpr ErrorCode kTraceparentFormat{"traceparent.format"};
inline constexpr ErrorCode kTraceparentLength{"traceparent.length"};
inline constexpr ErrorCode kTraceparentParentId{"traceparent.parent_id"};
inline constexpr ErrorCode kTraceparentTraceId{"traceparent.trace_id"};
inline constexpr ErrorCode kTraceparentVersion{"traceparent.version"};
inline constexpr ErrorCode kWorkloadDistribution{"workload.distribution"};
inline constexpr ErrorCode kWorkloadEmpty{"workload.empty"};
inline constexpr ErrorCode kWorkloadField{"workload.field"};
inline constexpr ErrorCode kWorkloadJson{"workload.json"};
}  // namespace errc

struct ErrorInfo {
  ErrorCode code;
  int exit_code;             // of a command that stops on it; 0: it ends no command
  std::string_view meaning;  // for docs/ERRORS.md
};

// The table, sorted by code.
std::span<const ErrorInfo> error_catalog();
// The entry of a code's text, or nullptr.
const ErrorInfo* find_error(std::string_view code);

}  // namespace mpo
