// Constructed sweep receipts shared by the sweep tests (invented figures chosen so every rule has
// one clear outcome), and the same receipts shaped as fak's writer would have written them.
#pragma once

#include <boost/json.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/go_json.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/fold.hpp"
#include "sweep/receipt.hpp"

namespace mpo::sweep::fixtures {

inline const std::string kReceipt = sha256_digest("engine identity");

// `n` requests sent together at the start of the point, each taking `e2e_ms`, first token after
// `ttft_ms`, `tokens` output tokens (exact usage) with evenly spaced gaps.
inline std::vector<loadgen::Sample> samples(int n, double ttft_ms, double e2e_ms, std::int64_t tokens) {
  std::vector<loadgen::Sample> out;
  for (int i = 0; i < n; ++i) {
    loadgen::Sample s;
    s.id = "r" + std::to_string(i);
    s.ok = true;
    s.stream_mode = "sse";
    s.ttft_ms = ttft_ms;
    for (std::int64_t k = 1; k < tokens; ++k)
      s.itl_ms.push_back(loadgen::round_ms((e2e_ms - ttft_ms) / static_cast<double>(tokens - 1)));
    if (tokens > 1) s.tpot_ms = loadgen::round_ms((e2e_ms - ttft_ms) / static_cast<double>(tokens - 1));
    s.end_to_end_ms = e2e_ms;
    s.output_events = tokens;
    s.output_token_estimate = tokens;
    s.output_tokens_exact = tokens;
    s.output_token_count_basis = "usage.completion_tokens";
    s.usage = loadgen::SampleUsage{10, tokens, 10 + tokens, 0};
    s.response_model = "m";
    out.push_back(s);
  }
  return out;
}

// `edit` changes the samples before the point's stats and evidence are derived from them.
inline void add_point(SweepReceipt& r, double c, double ttft_ms, double e2e_ms, std::int64_t tokens = 100,
                      const std::function<void(std::vector<loadgen::Sample>&)>& edit = {}) {
  Point p;
  p.coordinate = c;
  p.workload_digest = r.workload_digest;
  TrackPoint tp;
  tp.track = "ours";
  tp.measurement_status = "measured";
  tp.model = "m";
  tp.engine = "vllm";
  tp.engine_receipt_digest = kReceipt;
  tp.batch_capacity = r.contracts[0].batch_capacity;
  tp.capacity_source = r.contracts[0].capacity_source;
  tp.samples = samples(static_cast<int>(c), ttft_ms, e2e_ms, tokens);
  if (edit) edit(tp.samples);
  FoldOptions fo;
  fo.slo_ms = 2000;
  tp.stats = fold_samples(tp.samples, fo);
  tp.evidence.generator = generator_evidence(tp.samples, GeneratorFigures{1.0, 0.01, e2e_ms / 1000});
  tp.evidence.confidence = confidence_evidence(tp.samples, 42);
  tp.evidence.errors_by_class = errors_by_class(tp.samples);
  tp.evidence.steady_state = steady_state_evidence(tp.samples);
  LoadFigures lf{"concurrency", c, false, 0, "2026-11-29T12:00:00Z", "2026-11-29T12:00:01Z"};
  tp.evidence.load = load_evidence(tp.samples, lf);
  tp.evidence.cache = cache_evidence(tp.samples, CacheDeclaration{"distinct_per_point", 0.25, std::nullopt}, nullptr);
  p.tracks.push_back(std::move(tp));
  r.points.push_back(std::move(p));
}

inline SweepReceipt base(std::int64_t capacity) {
  SweepReceipt r;
  r.generated_at = "2026-11-29T12:00:00Z";
  r.machine_id = "test-machine";
  r.model = "m";
  r.workload_digest = sha256_digest("workload");
  r.workload_requests = 8;
  r.contracts.push_back(Contract{"ours", "m", "vllm", kReceipt, capacity, "test-profile"});
  r.tool_version = "test";
  r.load.emplace();
  r.load->mode = "concurrency";
  r.load->slo_ms = 2000;
  return r;
}

// Throughput = c * 100 tokens / e2e. Up to 8 it scales; past it, e2e doubles with c.
inline SweepReceipt scaling_sweep(std::int64_t capacity, std::vector<double> coords) {
  SweepReceipt r = base(capacity);
  for (double c : coords) {
    const double e2e = c <= 8 ? 1000 + 20 * c : 1160 * (c / 8);
    const double ttft = c <= 8 ? 50 + c : 50 + 600 * (c / 8 - 1) + 8;
    add_point(r, c, ttft, e2e);
  }
  return r;
}

// Our receipt as fak's writer would have written it: no samples, evidence or our summary blocks
// (invented from ours by removal).
inline boost::json::object fak_shaped(const SweepReceipt& r) {
  auto doc = receipt_json(r).as_object();
  for (const char* k : {"tool", "load", "validity"}) doc.erase(k);
  for (auto& p : doc["points"].as_array()) {
    for (auto& t : p.as_object()["tracks"].as_array()) {
      t.as_object().erase("evidence");
      t.as_object().erase("samples");
    }
  }
  for (auto& t : doc["tracks"].as_array()) {
    t.as_object().erase("p99_boundary");
    t.as_object().erase("saturation");
  }
  return doc;
}

}  // namespace mpo::sweep::fixtures
