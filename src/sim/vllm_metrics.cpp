// The implementation of sim/vllm_metrics.hpp. Renders the engine's state as vLLM V1's /metrics
// (Prometheus text format 0.0.4), with the metric names, types, HELP text, label names and
// histogram buckets of the real vLLM 0.29.0 capture.
#include "sim/vllm_metrics.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "promtext/text_writer.hpp"

namespace mpo::sim {
namespace {

using promtext::LabelView;
using promtext::MetricType;

// vLLM's page through the project's one exposition writer: every series carries engine="0" and
// model_name, as vLLM 0.29.0's do; numbers as prometheus_client writes them ("10.0").
class Writer {
 public:
  explicit Writer(std::string model) : model_(std::move(model)) {}

  void family(std::string_view name, MetricType type, std::string_view help) { w_.family(name, type, help); }
  void sample(std::string_view name, double v) { w_.sample(name, {{"engine", "0"}, {"model_name", model_}}, v); }
  // With one more label after model_name (the order vLLM's label names are declared in).
  void sample(std::string_view name, double v, LabelView extra) {
    w_.sample(name, {{"engine", "0"}, {"model_name", model_}, extra}, v);
  }
  void gauge(std::string_view name, std::string_view help, double v) {
    family(name, MetricType::kGauge, help);
    sample(name, v);
  }
  // A counter with its _created companion, as prometheus_client exposes them.
  void counter(std::string_view base, std::string_view help, double v, double created) {
    const std::string total = fmt::format("{}_total", base);
    family(total, MetricType::kCounter, help);
    sample(total, v);
    gauge(fmt::format("{}_created", base), help, created);
  }
  // A labelled counter: one `_total` sample per value of `label`, then its `_created` family with
  // one sample per value, as prometheus_client writes labelled children.
  void labelled_counter(std::string_view base, std::string_view help, std::string_view label,
                        const std::vector<std::pair<std::string, double>>& values, double created) {
    const std::string total = fmt::format("{}_total", base);
    const std::string created_name = fmt::format("{}_created", base);
    family(total, MetricType::kCounter, help);
    for (const auto& [value, v] : values) sample(total, v, {label, value});
    family(created_name, MetricType::kGauge, help);
    for (const auto& [value, v] : values) sample(created_name, created, {label, value});
  }
  void histogram(std::string_view name, std::string_view help, const Histogram& h, double created) {
    family(name, MetricType::kHistogram, help);
    // prometheus_client orders the bucket labels by name: engine, le, model_name.
    w_.histogram_samples(name, {{"engine", "0"}, {"model_name", model_}}, h.bounds(), h.counts(), h.sum());
    gauge(fmt::format("{}_created", name), help, created);
  }
  promtext::TextWriter& text() { return w_; }
  const std::string& model() const { return model_; }
  std::string take() && { return std::move(w_).take(); }

 private:
  std::string model_;
  promtext::TextWriter w_{promtext::Format::kText004, promtext::NumberStyle::kPython};
};

}  // namespace

std::string render_vllm_metrics(const Engine& engine, const MetricsContext& ctx) {
  Writer w(ctx.model_name);
  const EngineStats& s = engine.stats();
  const EngineConfig& cfg = engine.config();
  const double created = ctx.created_time_s;

  w.family("process_start_time_seconds", MetricType::kGauge, "Start time of the process since unix epoch in seconds.");
  w.text().sample("process_start_time_seconds", {}, ctx.process_start_time_s);

  constexpr std::string_view kFlopsHelp = "(for Model Flops Utilization calculations).";
  // Published and never moved, as vLLM without --enable-mfu-metrics: not enabled, not zero work.
  w.counter("vllm:estimated_flops_per_gpu",
            fmt::format("Estimated number of floating point operations per GPU {}", kFlopsHelp), 0, created);
  w.counter("vllm:estimated_read_bytes_per_gpu",
            fmt::format("Estimated number of bytes read from memory per GPU {}", kFlopsHelp), 0, created);
  w.counter("vllm:estimated_write_bytes_per_gpu",
            fmt::format("Estimated number of bytes written to memory per GPU {}", kFlopsHelp), 0, created);

  const int waiting = engine.num_waiting();
  const int deferred = engine.num_waiting_deferred(ctx.now_s);
  w.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", engine.num_running());
  w.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting);
  w.family("vllm:num_requests_waiting_by_reason", MetricType::kGauge,
           "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling "
           "capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked "
           "status). Sum of all reasons equals vllm:num_requests_waiting.");
  w.sample("vllm:num_requests_waiting_by_reason", waiting - deferred, {"reason", "capacity"});
  w.sample("vllm:num_requests_waiting_by_reason", deferred, {"reason", "deferred"});
  w.family("vllm:engine_sleep_state", MetricType::kGauge,
           "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "
           "weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.");
  w.sample("vllm:engine_sleep_state", 1, {"sleep_state", "awake"});
  w.sample("vllm:engine_sleep_state", 0, {"sleep_state", "weights_offloaded"});
  w.sample("vllm:engine_sleep_state", 0, {"sleep_state", "discard_all"});
  w.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", engine.kv_cache_usage());

  w.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
            static_cast<double>(s.prefix_cache_queries), created);
  w.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            static_cast<double>(s.prefix_cache_hits), created);
  w.counter("vllm:external_prefix_cache_queries",
            "External prefix cache queries from KV connector cross-instance cache sharing, in terms of "
            "number of queried tokens.",
            0, created);
  w.counter("vllm:external_prefix_cache_hits",
            "External prefix cache hits from KV connector cross-instance cache sharing, in terms of "
            "number of cached tokens.",
            0, created);
  w.counter("vllm:mm_cache_queries", "Multi-modal cache queries, in terms of number of queried items.", 0, created);
  w.counter("vllm:mm_cache_hits", "Multi-modal cache hits, in terms of number of cached items.", 0, created);
  w.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
            static_cast<double>(s.preemptions), created);
  w.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", static_cast<double>(s.prompt_tokens), created);

  w.labelled_counter("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", "source",
                     {{"local_compute", static_cast<double>(s.prompt_tokens_computed)},
                      {"local_cache_hit", static_cast<double>(s.prompt_tokens_cached)},
                      {"external_kv_transfer", 0.0}},
                     created);
  w.counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external).",
            static_cast<double>(s.prompt_tokens_cached), created);
  w.counter("vllm:generation_tokens", "Number of generation tokens processed.",
            static_cast<double>(s.generation_tokens), created);

  w.family("vllm:request_success_total", MetricType::kCounter, "Count of successfully processed requests.");
  for (FinishReason r : kAllFinishReasons) {
    // Label order as prometheus_client sorts them: engine, finished_reason, model_name.
    w.text().sample("vllm:request_success_total",
                    {{"engine", "0"}, {"finished_reason", to_string(r)}, {"model_name", w.model()}},
                    static_cast<double>(s.finished[static_cast<std::size_t>(r)]));
  }
  w.family("vllm:request_success_created", MetricType::kGauge, "Count of successfully processed requests.");
  for (FinishReason r : kAllFinishReasons) {
    w.text().sample("vllm:request_success_created",
                    {{"engine", "0"}, {"finished_reason", to_string(r)}, {"model_name", w.model()}}, created);
  }

  if (cfg.num_speculative_tokens > 0) {
    // Registered only when speculative decoding is configured, as vLLM does.
    w.counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", static_cast<double>(s.spec_drafts),
              created);
    w.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", static_cast<double>(s.spec_draft_tokens),
              created);
    w.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
              static_cast<double>(s.spec_accepted_tokens), created);
    std::vector<std::pair<std::string, double>> per_pos;
    for (std::size_t k = 0; k < s.spec_accepted_per_pos.size(); ++k) {
      per_pos.emplace_back(std::to_string(k), static_cast<double>(s.spec_accepted_per_pos[k]));
    }
    w.labelled_counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
                       "position", per_pos, created);
  }

  // vLLM's histograms, in the order its /metrics lists them.
  struct HistogramFamily {
    const char* name;
    const char* help;
    Histogram EngineStats::*values;
  };
  // clang-format off
  static constexpr HistogramFamily kHistograms[] = {
      {"vllm:request_prompt_tokens", "Number of prefill tokens processed.", &EngineStats::request_prompt_tokens},
      {"vllm:request_generation_tokens", "Number of generation tokens processed.", &EngineStats::request_generation_tokens},
      {"vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", &EngineStats::iteration_tokens},
      {"vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", &EngineStats::request_max_num_generation_tokens},
      {"vllm:request_params_n", "Histogram of the n request parameter.", &EngineStats::request_params_n},
      {"vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", &EngineStats::request_params_max_tokens},
      {"vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &EngineStats::time_to_first_token},
      {"vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", &EngineStats::inter_token_latency},
      {"vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", &EngineStats::request_time_per_output_token},
      {"vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &EngineStats::e2e_request_latency},
      {"vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", &EngineStats::request_queue_time},
      {"vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", &EngineStats::request_inference_time},
      {"vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", &EngineStats::request_prefill_time},
      {"vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", &EngineStats::request_decode_time},
      {"vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", &EngineStats::request_prefill_kv_computed_tokens},
  };
  // clang-format on
  for (const auto& h : kHistograms) w.histogram(h.name, h.help, s.*h.values, created);

  w.family("vllm:cache_config_info", MetricType::kGauge, "Information of the LLMEngine CacheConfig");
  const int tokens = cfg.num_gpu_blocks * cfg.block_size;
  const std::string block_size = std::to_string(cfg.block_size), size_tokens = std::to_string(tokens),
                    gpu_blocks = std::to_string(cfg.num_gpu_blocks),
                    max_concurrency = promtext::format_number(static_cast<double>(tokens) / cfg.max_model_len,
                                                              promtext::NumberStyle::kPython);
  w.text().sample("vllm:cache_config_info",
                  {{"_block_size_resolved", "True"},
                   {"block_size", block_size},
                   {"cache_dtype", "auto"},
                   {"enable_prefix_caching", cfg.enable_prefix_caching ? "True" : "False"},
                   {"engine", "0"},
                   {"gpu_memory_utilization", "0.9"},
                   {"is_attention_free", "False"},
                   {"kv_cache_dtype_skip_layers", "[]"},
                   {"kv_cache_layout", "None"},
                   {"kv_cache_max_concurrency", max_concurrency},
                   {"kv_cache_memory_bytes", "None"},
                   {"kv_cache_size_tokens", size_tokens},
                   {"kv_offloading_backend", "native"},
                   {"kv_offloading_size", "None"},
                   {"kv_sharing_fast_prefill", "False"},
                   {"mamba_block_size", "None"},
                   {"mamba_cache_dtype", "auto"},
                   {"mamba_cache_mode", "none"},
                   {"mamba_page_size_padded", "None"},
                   {"mamba_ssm_cache_dtype", "auto"},
                   {"num_cpu_blocks", "None"},
                   {"num_gpu_blocks", gpu_blocks},
                   {"num_gpu_blocks_override", "None"},
                   {"prefix_cache_retention_interval", "0"},
                   {"prefix_caching_hash_algo", "sha256"},
                   {"prefix_match_unit", "None"},
                   {"replayssm_buffer_len", "16"},
                   {"skip_page_size_padded", "None"},
                   {"sliding_window", "None"},
                   {"use_kda_recoverssm", "False"},
                   {"use_replayssm", "False"},
                   {"user_specified_block_size", "False"},
                   {"user_specified_mamba_block_size", "False"}},
                  1.0);
  return std::move(w).take();
}

}  // namespace mpo::sim
