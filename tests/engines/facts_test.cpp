// Catalogs and facts on the real captures: what each engine states, and what is withheld.
#include "engines/facts.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engines/delta.hpp"
#include "support/fixtures.hpp"

namespace mpo::engines {
namespace {

constexpr const char* kVllmV1 = "vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom";
constexpr const char* kVllmV0 = "vllm/vllm-v0-plus-v1-appended_datadog-composite_opt-125m.prom";
constexpr const char* kSglang = "sglang/sglang_v0.5.10.post1_datadog-fixture_opt-125m.prom";
constexpr const char* kSglangOld = "sglang/sglang_docs-example_llama-3.1-8b_multiproc-order.prom";
constexpr const char* kLlama = "llamacpp/llamacpp_server-cuda_2026-05_lfm2.5-8b_rtx4080.prom";
constexpr const char* kTgi = "tgi/tgi_datadog-fixture_payload.prom";
constexpr const char* kDcgm = "dcgm/dcgm-exporter_datadog-fixture_t4-mixed.prom";

EngineSignals signals_of(const char* file) {
  auto e = promtext::parse_exposition(test::read_fixture(file));
  EXPECT_TRUE(e.ok());
  return extract_signals(*e);
}

const Fact& fact(const std::vector<Fact>& facts, std::string_view id) {
  const Fact* f = find_fact(facts, id);
  if (!f) throw std::runtime_error("no fact " + std::string(id));
  return *f;
}

TEST(Catalog, DetectsEachEngineFromTheNamesPresent) {
  EXPECT_EQ(signals_of(kVllmV1).engine, Engine::kVllmV1);
  EXPECT_EQ(signals_of(kVllmV0).engine, Engine::kVllmV0);
  EXPECT_EQ(signals_of(kSglang).engine, Engine::kSglang);
  EXPECT_EQ(signals_of(kSglangOld).engine, Engine::kSglang);
  EXPECT_EQ(signals_of(kLlama).engine, Engine::kLlamaCpp);
  EXPECT_EQ(signals_of(kTgi).engine, Engine::kTgi);
  const EngineSignals dcgm = signals_of(kDcgm);
  EXPECT_EQ(dcgm.engine, Engine::kUnknown);
  EXPECT_TRUE(derive_facts(dcgm, std::nullopt).empty());  // parsed, nothing claimed
}

TEST(Catalog, RayVllmPrefixIsTheSameCatalog) {
  auto e = promtext::parse_exposition(
      "# TYPE ray_vllm:num_requests_waiting gauge\n"
      "ray_vllm:num_requests_waiting{model_name=\"m\",WorkerId=\"a\"} 3\n"
      "ray_vllm:num_requests_waiting{model_name=\"m\",WorkerId=\"b\"} 4\n"
      "# TYPE ray_vllm:gpu_cache_usage_perc gauge\n"
      "ray_vllm:gpu_cache_usage_perc{model_name=\"m\",WorkerId=\"a\"} 0.5\n"
      "ray_vllm:gpu_cache_usage_perc{model_name=\"m\",WorkerId=\"b\"} 0.9\n");
  ASSERT_TRUE(e.ok());
  const EngineSignals s = extract_signals(*e);
  EXPECT_EQ(s.engine, Engine::kVllmV0);
  EXPECT_EQ(s.prefix, "ray_vllm:");
  EXPECT_EQ(*s.value(Signal::kWaiting), 7.0);  // summed over workers
  EXPECT_EQ(*s.value(Signal::kKvUsage), 0.9);  // the fullest pool
  EXPECT_EQ(s.scalar(Signal::kKvUsage)->source, "ray_vllm:gpu_cache_usage_perc");
  EXPECT_EQ(s.models, std::vector<std::string>{"m"});
}

// Issue 20: since vLLM #25439 Ray Serve exports vLLM's metrics with every ':' as '_' (invented page
// in that spelling).
TEST(Catalog, SyntheticRayVllmUnderscoreNamesAreTheSameCatalog) {
  auto e = promtext::parse_exposition(
      "# TYPE ray_vllm_num_requests_waiting gauge\n"
      "ray_vllm_num_requests_waiting{model_name=\"m\",WorkerId=\"a\"} 3\n"
      "ray_vllm_num_requests_waiting{model_name=\"m\",WorkerId=\"b\"} 4\n"
      "# TYPE ray_vllm_kv_cache_usage_perc gauge\n"
      "ray_vllm_kv_cache_usage_perc{model_name=\"m\",WorkerId=\"a\"} 0.25\n"
      "# TYPE ray_vllm_prompt_tokens_total counter\n"
      "ray_vllm_prompt_tokens_total{model_name=\"m\",WorkerId=\"a\"} 100\n");
  ASSERT_TRUE(e.ok()) << e.error().message;
  const EngineSignals s = extract_signals(*e);
  EXPECT_EQ(s.engine, Engine::kVllmV1);
  EXPECT_EQ(s.prefix, "ray_vllm_");
  EXPECT_EQ(*s.value(Signal::kWaiting), 7.0);
  EXPECT_EQ(*s.value(Signal::kKvUsage), 0.25);
  EXPECT_EQ(s.scalar(Signal::kPromptTokens)->source, "ray_vllm_prompt_tokens_total");
  EXPECT_EQ(s.models, std::vector<std::string>{"m"});
}

// Issue 20: llama.cpp counts the prompt tokens it computed (a real b10309 page: 14 after five
// 10-token prompts, the repeats served from its cache); a prompt total is never claimed from that.
TEST(Facts, LlamaCppPromptTokensAreComputedTokensAndATotalNeedsTheCachedCounter) {
  const EngineSignals real = signals_of("llamacpp/llamacpp_b10309_cpu_tiny-random_after-load.prom");
  EXPECT_EQ(*real.value(Signal::kComputedPromptTokens), 14.0);
  EXPECT_FALSE(real.value(Signal::kPromptTokens));
  const auto facts = derive_facts(real, std::nullopt);
  const Fact& tokens = fact(facts, "tokens");
  EXPECT_NE(tokens.statement.find("14 computed_prompt_tokens"), std::string::npos) << tokens.statement;
  EXPECT_EQ(tokens.value("prompt_tokens"), nullptr);
  EXPECT_EQ(fact(facts, "cached_prompt_fraction").status, FactStatus::kUnavailable);

  // Invented page in the newer builds' shape (llama.cpp #26920): the total is the sum.
  auto newer = promtext::parse_exposition(
      "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total 14\n"
      "# TYPE llamacpp:prompt_tokens_cached_total counter\nllamacpp:prompt_tokens_cached_total 36\n"
      "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n");
  ASSERT_TRUE(newer.ok()) << newer.error().message;
  const EngineSignals s = extract_signals(*newer);
  EXPECT_EQ(*s.value(Signal::kPromptTokens), 50.0);
  EXPECT_EQ(s.scalar(Signal::kPromptTokens)->source,
            "llamacpp:prompt_tokens_total + llamacpp:prompt_tokens_cached_total");
  const auto newer_facts = derive_facts(s, std::nullopt);
  const Fact& share = fact(newer_facts, "cached_prompt_fraction");
  ASSERT_NE(share.value("cached_prompt_fraction"), nullptr) << share.statement << share.reason;
  EXPECT_DOUBLE_EQ(share.value("cached_prompt_fraction")->value, 36.0 / 50.0);
}

// Issue 20: speculative decoding. The real llama.cpp b10309 page publishes the counters at 0 (no
// draft model): unavailable, never "0% accepted". An invented vLLM page over a window states rates.
TEST(Facts, SpeculativeDecodingAcceptanceFromEachEnginesCounters) {
  const auto llama = derive_facts(signals_of("llamacpp/llamacpp_b10309_cpu_tiny-random_after-load.prom"), std::nullopt);
  EXPECT_EQ(fact(llama, "speculative_decoding").status, FactStatus::kUnavailable);
  EXPECT_NE(fact(llama, "speculative_decoding").reason.find("no draft"), std::string::npos);

  auto page = [](double drafts, double proposed, double accepted) {
    return fmt::format(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"
        "# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts_total {}\n"
        "# TYPE vllm:spec_decode_num_draft_tokens counter\nvllm:spec_decode_num_draft_tokens_total {}\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens counter\nvllm:spec_decode_num_accepted_tokens_total {}\n",
        drafts, proposed, accepted);
  };
  auto before = promtext::parse_exposition(page(100, 300, 150));
  auto after = promtext::parse_exposition(page(300, 900, 660));
  ASSERT_TRUE(before.ok() && after.ok());
  const auto d = delta_signals(extract_signals(*before), extract_signals(*after));
  ASSERT_TRUE(d.ok()) << d.error().message;
  const auto facts = derive_facts(*d, 2.0);
  const Fact& spec = fact(facts, "speculative_decoding");
  EXPECT_EQ(spec.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(spec.value("acceptance_rate")->value, 510.0 / 600.0);
  EXPECT_DOUBLE_EQ(spec.value("mean_accepted_length")->value, 1 + 510.0 / 200.0);
  EXPECT_DOUBLE_EQ(spec.value("draft_tokens_per_draft")->value, 3.0);

  auto sglang = promtext::parse_exposition(
      "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 1\n"
      "# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length 2.5\n"
      "# TYPE sglang:spec_accept_rate gauge\nsglang:spec_accept_rate 0.75\n");
  ASSERT_TRUE(sglang.ok());
  const auto sf = derive_facts(extract_signals(*sglang), std::nullopt);
  EXPECT_EQ(fact(sf, "speculative_decoding").status, FactStatus::kStated);
  EXPECT_EQ(fact(sf, "speculative_decoding").value("spec_accept_length")->value, 2.5);
}

// Issue 20, invented edge cases: one series with two points is not two series.
TEST(Catalog, SyntheticARepeatedPointOfOneSeriesIsItsLastNeverTheSum) {
  auto e = promtext::parse_exposition(
      "# TYPE vllm:prompt_tokens counter\n"
      "vllm:prompt_tokens_total{model_name=\"m\"} 10 100\n"
      "vllm:prompt_tokens_total{model_name=\"m\"} 20 200\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{engine=\"0\"} 1 100\n"
      "vllm:num_requests_waiting{engine=\"0\"} 2 200\n"
      "vllm:num_requests_waiting{engine=\"1\"} 5\n");
  ASSERT_TRUE(e.ok()) << e.error().message;
  const EngineSignals s = extract_signals(*e);
  EXPECT_EQ(*s.value(Signal::kPromptTokens), 20.0);
  EXPECT_EQ(*s.value(Signal::kWaiting), 7.0);  // engine 0's last point + engine 1
  EXPECT_EQ(s.scalar(Signal::kWaiting)->series, 2);
  const bool noted = std::any_of(s.notes.begin(), s.notes.end(), [](const std::string& n) {
    return n.find("last point is used") != std::string::npos;
  });
  EXPECT_TRUE(noted);
}

// OpenMetrics spells an info family without its _info suffix (`# TYPE vllm:cache_config info`).
TEST(Catalog, SyntheticAnOpenMetricsInfoFamilyIsFoundByEitherSpelling) {
  auto e = promtext::parse_exposition(
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running 1\n"
      "# TYPE vllm:cache_config info\n"
      "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"1000\",enable_prefix_caching=\"True\"} 1\n"
      "# EOF\n");
  ASSERT_TRUE(e.ok()) << e.error().message;
  const EngineSignals s = extract_signals(*e);
  ASSERT_FALSE(s.cache_config.empty());
  EXPECT_EQ(*promtext::find_label(s.cache_config, "num_gpu_blocks"), "1000");
}

// Issue 20, invented page: "nan prompt_tokens" was printed as a stated fact.
TEST(Facts, SyntheticNonFiniteOrNegativeCountersAreDefectsNeverStated) {
  auto e = promtext::parse_exposition(
      "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total NaN\n"
      "# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total -5\n"
      "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running +Inf\n"
      "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 2\n");
  ASSERT_TRUE(e.ok()) << e.error().message;
  const auto facts = derive_facts(extract_signals(*e), std::nullopt);
  for (const Fact& f : facts) {
    if (f.id == "page_defects") continue;
    for (const FactValue& v : f.values) EXPECT_TRUE(std::isfinite(v.value) && v.value >= 0) << f.id << " " << v.name;
    EXPECT_EQ(f.statement.find("nan"), std::string::npos) << f.statement;
    EXPECT_EQ(f.statement.find("-5"), std::string::npos) << f.statement;
    EXPECT_EQ(f.statement.find("inf"), std::string::npos) << f.statement;
  }
  const Fact& defects = fact(facts, "page_defects");
  EXPECT_NE(defects.statement.find("vllm:prompt_tokens_total = nan"), std::string::npos) << defects.statement;
  EXPECT_NE(defects.statement.find("vllm:generation_tokens_total = -5"), std::string::npos);
  EXPECT_NE(defects.statement.find("vllm:num_requests_running = inf"), std::string::npos);
  EXPECT_EQ(fact(facts, "tokens").status, FactStatus::kUnavailable);
  // The sound values still speak.
  EXPECT_EQ(fact(facts, "queueing_reason").values.at(0).value, 2);
}

TEST(Facts, Vllm0290KvPoolFlopsPrefillAndCache) {
  const EngineSignals s = signals_of(kVllmV1);
  EXPECT_EQ(s.models, std::vector<std::string>{"qwen2.5-1.5b"});
  EXPECT_EQ(*s.value(Signal::kProcessStartTime), 1.78990180866e+09);
  const auto facts = derive_facts(s, std::nullopt);
  ASSERT_FALSE(facts.empty());
  EXPECT_EQ(facts.front().id, "queueing_reason");  // printed above the numbers

  const Fact& pool = fact(facts, "kv_pool_tokens");
  EXPECT_EQ(pool.status, FactStatus::kDerived);
  EXPECT_EQ(pool.value("kv_pool_tokens")->value, 20184.0 * 16.0);
  EXPECT_EQ(pool.value("kv_cache_size_tokens")->value, 322944.0);
  EXPECT_NE(pool.statement.find("equal to the stated kv_cache_size_tokens"), std::string::npos);

  // The FLOPs and byte estimates are 0 after 584 generated tokens: published, not implemented.
  for (const char* id : {"estimated_flops", "estimated_read_bytes", "estimated_write_bytes"}) {
    const Fact& f = fact(facts, id);
    EXPECT_EQ(f.status, FactStatus::kNotEnabled) << id;
    EXPECT_TRUE(f.values.empty()) << id;  // withheld: no number
    EXPECT_NE(f.reason.find("584"), std::string::npos) << f.reason;
  }

  const Fact& q = fact(facts, "queueing_reason");
  EXPECT_EQ(q.status, FactStatus::kStated);
  EXPECT_EQ(q.value("waiting_capacity")->value, 0.0);
  EXPECT_EQ(q.statement, "No request is waiting.");

  const Fact& prefill = fact(facts, "prefill_rate_per_stream");
  EXPECT_EQ(prefill.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(prefill.value("computed_prefill_tokens_per_s")->value, 98.0 / 1.1926902269998436);
  EXPECT_DOUBLE_EQ(prefill.value("nominal_prefill_tokens_per_s")->value, 530.0 / 1.1926902269998436);

  EXPECT_EQ(fact(facts, "prefix_caching").value("enabled")->value, 1.0);
  const Fact& hits = fact(facts, "prefix_cache_hit_rate");
  EXPECT_EQ(hits.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(hits.value("prefix_cache_hit_rate")->value, 432.0 / 530.0);
  EXPECT_DOUBLE_EQ(fact(facts, "cached_prompt_fraction").value("cached_prompt_fraction")->value, 432.0 / 530.0);

  const Fact& ttft = fact(facts, "ttft_seconds");
  EXPECT_EQ(ttft.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(ttft.value("mean")->value, 1.4721317291259766 / 10.0);
  EXPECT_TRUE(ttft.value("p50")->estimate);
  EXPECT_EQ(fact(facts, "requests").value("requests_finished")->value, 10.0);
}

// The real V0 scrape is the head of the composite file, before Datadog appended V1-era families.
std::string v0_head() {
  const std::string text = test::read_fixture(kVllmV0);
  return text.substr(0, text.find("# HELP vllm:kv_cache_usage_perc"));
}

TEST(Facts, V0PrefixCachingOffMakesCachedShareExactlyZero) {
  auto e = promtext::parse_exposition(v0_head());
  ASSERT_TRUE(e.ok());
  const EngineSignals s = extract_signals(*e);
  EXPECT_EQ(s.engine, Engine::kVllmV0);
  const auto facts = derive_facts(s, std::nullopt);
  const Fact& on = fact(facts, "prefix_caching");
  EXPECT_EQ(on.status, FactStatus::kStated);
  EXPECT_EQ(on.value("enabled")->value, 0.0);
  const Fact& cached = fact(facts, "cached_prompt_fraction");
  EXPECT_EQ(cached.status, FactStatus::kStated);  // not "unknown"
  EXPECT_EQ(cached.value("cached_prompt_fraction")->value, 0.0);
  EXPECT_EQ(cached.sources[0], "vllm:cache_config_info{enable_prefix_caching=\"False\"}");
  // V0 names for V0 signals.
  EXPECT_EQ(s.scalar(Signal::kKvUsage)->source, "vllm:gpu_cache_usage_perc");
  EXPECT_EQ(s.histogram(Signal::kItl)->source, "vllm:time_per_output_token_seconds");
  EXPECT_EQ(fact(facts, "kv_pool_tokens").value("kv_pool_tokens")->value, 7281.0 * 16.0);
  EXPECT_EQ(fact(facts, "queueing_reason").status, FactStatus::kUnavailable);  // V0 has no split
}

TEST(Facts, CompositeThatContradictsItselfClaimsNoCacheFigures) {
  const EngineSignals s = signals_of(kVllmV0);
  EXPECT_FALSE(s.notes.empty());  // V1-era families beside V0 names
  const auto facts = derive_facts(s, std::nullopt);
  // cache_config_info says off; the appended counters say 64 cached tokens: no number either way.
  for (const char* id : {"cached_prompt_fraction", "prefix_cache_hit_rate"}) {
    const Fact& f = fact(facts, id);
    EXPECT_EQ(f.status, FactStatus::kUnavailable) << id;
    EXPECT_TRUE(f.values.empty()) << id;
    EXPECT_NE(f.reason.find("contradicts itself"), std::string::npos) << f.reason;
  }
}

TEST(Facts, QuantilesCarryTheirBucketAndSayWhenAboveTheHighest) {
  const auto facts = derive_facts(signals_of(kSglangOld), std::nullopt);
  const Fact& ttft = fact(facts, "ttft_seconds");
  const FactValue* p50 = ttft.value("p50");
  ASSERT_NE(p50, nullptr);
  // 2513 of 11008 observations are <= 30 s: the median is above the highest finite bound.
  EXPECT_EQ(p50->value, 30.0);
  EXPECT_TRUE(std::isinf(p50->bucket->second));
  EXPECT_NE(ttft.statement.find("p50 >30 s (above the highest bucket)"), std::string::npos) << ttft.statement;
}

TEST(Facts, SglangStatesPoolAndHitRateGauge) {
  const auto facts = derive_facts(signals_of(kSglang), std::nullopt);
  const Fact& pool = fact(facts, "kv_pool_tokens");
  EXPECT_EQ(pool.status, FactStatus::kStated);
  EXPECT_EQ(pool.value("kv_pool_tokens")->value, 430839.0);
  const Fact& hit = fact(facts, "prefix_cache_hit_rate");
  EXPECT_EQ(hit.status, FactStatus::kStated);
  EXPECT_EQ(hit.values[0].value, 0.2);
  EXPECT_DOUBLE_EQ(fact(facts, "cached_prompt_fraction").value("cached_prompt_fraction")->value, 1.0 / 5.0);
  EXPECT_EQ(fact(facts, "prefill_rate_per_stream").status, FactStatus::kUnavailable);
  EXPECT_EQ(fact(facts, "estimated_flops").status, FactStatus::kUnavailable);
}

TEST(Facts, LlamaCppWallTimeIsNotAliasedOntoPrefillRate) {
  const auto facts = derive_facts(signals_of(kLlama), std::nullopt);
  EXPECT_EQ(find_fact(facts, "prefill_rate_per_stream"), nullptr);
  const Fact& wall = fact(facts, "llamacpp_wall_throughput");
  EXPECT_EQ(wall.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(wall.value("prompt_tokens_per_wall_s")->value, 26129.0 / 32.378);
  EXPECT_DOUBLE_EQ(wall.value("generated_tokens_per_wall_s")->value, 10911.0 / 469.376);
  EXPECT_NE(wall.statement.find("not vLLM's per-stream prefill rate"), std::string::npos);
}

TEST(Facts, TgiTokenTotalsFromHistogramSums) {
  const EngineSignals s = signals_of(kTgi);
  EXPECT_EQ(*s.value(Signal::kPromptTokens), 662.0);
  EXPECT_EQ(s.scalar(Signal::kPromptTokens)->source, "tgi_request_input_length_sum");
  EXPECT_EQ(*s.value(Signal::kRequestsFailed), 2.0);
  EXPECT_EQ(*s.value(Signal::kRequestsTotal), 111.0);
  const auto facts = derive_facts(s, std::nullopt);
  EXPECT_EQ(fact(facts, "ttft_seconds").status, FactStatus::kUnavailable);  // TGI publishes none
  EXPECT_EQ(fact(facts, "e2e_seconds").status, FactStatus::kDerived);
}

// Issue 20: pages written from each engine's documented names (the fixtures say so in their names).
constexpr const char* kVllmDocumented = "vllm/DOCUMENTED_vllm-v1_spec-decode_kv-connector_residency_nixl.prom";
constexpr const char* kSglangRanks = "sglang/DOCUMENTED_sglang_dp2-tp2_priority_kv-pool_retraction.prom";

TEST(Catalog, SglangRankCopiesCountOncePriorityBreakdownsNotAtAllDataParallelRanksAddUp) {
  const EngineSignals s = signals_of(kSglangRanks);
  ASSERT_EQ(s.engine, Engine::kSglang);
  EXPECT_EQ(*s.value(Signal::kRunning), 8.0);   // dp0 5 + dp1 3; tp copies once; priority="1" is a breakdown
  EXPECT_EQ(*s.value(Signal::kWaiting), 10.0);  // 4 + 6
  EXPECT_EQ(s.scalar(Signal::kRunning)->series, 2);
  EXPECT_EQ(*s.value(Signal::kKvPoolTokens), 1000000.0);
  EXPECT_EQ(*s.value(Signal::kKvUsage), 0.6);  // the fullest data-parallel pool
  EXPECT_EQ(*s.value(Signal::kPreemptions), 12.0);
  EXPECT_EQ(*s.value(Signal::kCachedPromptTokens), 400.0);  // cache_source="total", not device + host + total
  EXPECT_EQ(s.scalar(Signal::kCachedPromptTokens)->source, "sglang:cached_tokens_total{cache_source=\"total\"}");
  const bool noted = std::any_of(s.notes.begin(), s.notes.end(), [](const std::string& n) {
    return n.find(
               "one copy per tensor/pipeline/expert-parallel rank, counted once: sglang:num_running_reqs, "
               "sglang:num_queue_reqs") == 0;
  });
  EXPECT_TRUE(noted) << fmt::format("{}", fmt::join(s.notes, "\n"));
}

TEST(Facts, SglangRetractionIsPreemptionAndThePoolSplitsIntoHeldEvictableFree) {
  const auto facts = derive_facts(signals_of(kSglangRanks), std::nullopt);
  const Fact& pre = fact(facts, "preemptions");
  EXPECT_EQ(pre.status, FactStatus::kStated);
  EXPECT_EQ(pre.value("preemptions")->value, 12.0);
  EXPECT_EQ(pre.value("preempted_prompt_tokens")->value, 12000.0);
  EXPECT_EQ(pre.value("preempted_output_tokens")->value, 1200.0);
  EXPECT_EQ(pre.value("retracted_now")->value, 1.0);
  EXPECT_NE(pre.statement.find("retraction"), std::string::npos) << pre.statement;
  const Fact& kv = fact(facts, "kv_pressure");
  EXPECT_EQ(kv.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(kv.value("held_fraction")->value, 0.5);
  EXPECT_DOUBLE_EQ(kv.value("evictable_fraction")->value, 0.15);
  EXPECT_NE(kv.statement.find("room to spare"), std::string::npos) << kv.statement;
  EXPECT_EQ(fact(facts, "speculative_decoding").value("spec_verify_calls")->value, 900.0);
  EXPECT_NE(fact(facts, "speculative_decoding").statement.find("no acceptance is published"), std::string::npos);
  // The real single-rank capture still reads as before: its one tp_rank="0" copy counts once.
  EXPECT_EQ(*signals_of(kSglang).value(Signal::kKvPoolTokens), 430839.0);
}

TEST(Facts, AFullLookingSglangPoolOfEvictableCacheIsNotPressure) {
  auto e = promtext::parse_exposition(
      "# TYPE sglang:kv_used_tokens gauge\nsglang:kv_used_tokens{tp_rank=\"0\"} 100\n"
      "# TYPE sglang:kv_evictable_tokens gauge\nsglang:kv_evictable_tokens{tp_rank=\"0\"} 850\n"
      "# TYPE sglang:kv_available_tokens gauge\nsglang:kv_available_tokens{tp_rank=\"0\"} 50\n");
  ASSERT_TRUE(e.ok());
  const auto facts = derive_facts(extract_signals(*e), std::nullopt);
  const Fact& kv = fact(facts, "kv_pressure");
  EXPECT_NE(kv.statement.find("mostly with cached prefixes"), std::string::npos) << kv.statement;
  EXPECT_DOUBLE_EQ(kv.value("held_fraction")->value, 0.1);
}

TEST(Facts, VllmAcceptanceByPositionConnectorCachesResidencyOffloadAndTransfer) {
  const EngineSignals s = signals_of(kVllmDocumented);
  ASSERT_EQ(s.engine, Engine::kVllmV1);
  const auto facts = derive_facts(s, std::nullopt);
  const Fact& spec = fact(facts, "speculative_decoding");
  EXPECT_DOUBLE_EQ(spec.value("acceptance_rate")->value, 0.5);
  EXPECT_DOUBLE_EQ(spec.value("mean_accepted_length")->value, 2.5);
  EXPECT_DOUBLE_EQ(spec.value("acceptance_at_position_0")->value, 0.75);
  EXPECT_DOUBLE_EQ(spec.value("acceptance_at_position_1")->value, 0.5);
  EXPECT_DOUBLE_EQ(spec.value("acceptance_at_position_2")->value, 0.25);
  EXPECT_NE(spec.statement.find("Accepted by draft position: 0 75.0%, 1 50.0%, 2 25.0%."), std::string::npos)
      << spec.statement;

  EXPECT_DOUBLE_EQ(fact(facts, "external_prefix_cache_hit_rate").values[0].value, 0.25);
  EXPECT_DOUBLE_EQ(fact(facts, "mm_cache_hit_rate").values[0].value, 0.25);

  const Fact& res = fact(facts, "kv_residency");
  EXPECT_EQ(res.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(res.value("idle_before_evict_mean")->value, 5.2);
  // Idle before eviction (median in 2-5 s) is shorter than the reuse gap (median in 10-20 s).
  EXPECT_LT(res.value("idle_before_evict_p50")->value, res.value("reuse_gap_p50")->value);
  EXPECT_NE(res.statement.find("evicts prefixes it would reuse"), std::string::npos) << res.statement;

  const Fact& off = fact(facts, "kv_offload");
  EXPECT_EQ(off.value("bytes_GPU_to_CPU")->value, 8e9);
  EXPECT_DOUBLE_EQ(off.value("gb_per_s_CPU_to_GPU")->value, 8.0);
  EXPECT_EQ(off.value("bytes")->value, 10e9);

  const Fact& xfer = fact(facts, "kv_transfer_seconds");
  EXPECT_EQ(xfer.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(xfer.value("mean")->value, 0.045);
  EXPECT_EQ(xfer.value("failed_transfers")->value, 2.0);
  EXPECT_NE(xfer.statement.find("inside its TTFT"), std::string::npos);
}

TEST(Facts, AcceptanceByPositionAndOffloadDirectionsAreDeltasOverAWindow) {
  auto page = [](double drafts, double pos0, double pos1, double up) {
    return fmt::format(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n"
        "# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts_total {0}\n"
        "# TYPE vllm:spec_decode_num_draft_tokens counter\nvllm:spec_decode_num_draft_tokens_total {1}\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens counter\nvllm:spec_decode_num_accepted_tokens_total {2}\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n"
        "vllm:spec_decode_num_accepted_tokens_per_pos_total{{position=\"0\"}} {3}\n"
        "vllm:spec_decode_num_accepted_tokens_per_pos_total{{position=\"1\"}} {4}\n"
        "# TYPE vllm:kv_offload_total_bytes counter\n"
        "vllm:kv_offload_total_bytes_total{{transfer_type=\"CPU_to_GPU\"}} {5}\n",
        drafts, 2 * drafts, pos0 + pos1, pos0, pos1, up);
  };
  auto before = promtext::parse_exposition(page(100, 90, 50, 1000));
  auto after = promtext::parse_exposition(page(300, 250, 90, 5000));
  ASSERT_TRUE(before.ok() && after.ok());
  const auto d = delta_signals(extract_signals(*before), extract_signals(*after));
  ASSERT_TRUE(d.ok()) << d.error().message;
  const auto facts = derive_facts(*d, 10.0);
  const Fact& spec = fact(facts, "speculative_decoding");
  EXPECT_DOUBLE_EQ(spec.value("acceptance_at_position_0")->value, 160.0 / 200.0);
  EXPECT_DOUBLE_EQ(spec.value("acceptance_at_position_1")->value, 40.0 / 200.0);
  EXPECT_EQ(d->scalar(Signal::kKvOffloadBytes)->part("CPU_to_GPU")->value, 4000.0);

  auto down = promtext::parse_exposition(page(400, 240, 100, 6000));  // position 0 went down: a reset
  ASSERT_TRUE(down.ok());
  const auto reset = delta_signals(extract_signals(*after), extract_signals(*down));
  ASSERT_FALSE(reset.ok());
  EXPECT_EQ(reset.error().code, "scrape.reset");
}

TEST(Facts, TgiBatchForwardPassesAndConcatenationReasons) {
  const EngineSignals s = signals_of(kTgi);
  const auto facts = derive_facts(s, std::nullopt);
  const Fact& b = fact(facts, "batching");
  EXPECT_EQ(b.status, FactStatus::kDerived);
  EXPECT_DOUBLE_EQ(b.value("prefill_forward_mean")->value, 1.246376687 / 16);
  EXPECT_DOUBLE_EQ(b.value("decode_forward_mean")->value, 89.03133092599998 / 1509);
  EXPECT_EQ(b.value("concatenations_chunking")->value, 3.0);
  // This TGI build publishes the batch's tokens but not the budget (tgi_batch_max_total_tokens).
  EXPECT_EQ(*s.value(Signal::kBatchTokens), 0.0);
  EXPECT_EQ(fact(facts, "kv_pressure").status, FactStatus::kUnavailable);
}

EngineSignals with_counter(const char* start, double generated) {
  auto e = promtext::parse_exposition(
      fmt::format("process_start_time_seconds {}\n"
                  "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{model_name=\"m\"}} {}\n"
                  "# TYPE vllm:time_to_first_token_seconds histogram\n"
                  "vllm:time_to_first_token_seconds_bucket{{le=\"0.1\",model_name=\"m\"}} {}\n"
                  "vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\",model_name=\"m\"}} {}\n"
                  "vllm:time_to_first_token_seconds_count{{model_name=\"m\"}} {}\n"
                  "vllm:time_to_first_token_seconds_sum{{model_name=\"m\"}} {}\n",
                  start, generated, generated / 2, generated, generated, generated / 10));
  EXPECT_TRUE(e.ok()) << e.error().message;
  return extract_signals(*e);
}

TEST(Delta, CountersAndHistogramsBecomeIncreases) {
  auto d = delta_signals(with_counter("100", 10), with_counter("100", 30));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(*d->value(Signal::kGenerationTokens), 20.0);
  const HistogramSignal* ttft = d->histogram(Signal::kTtft);
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(*ttft->merged.count, 20.0);
  EXPECT_EQ(ttft->merged.buckets[0].cumulative, 10.0);
  EXPECT_DOUBLE_EQ(*ttft->merged.sum, 2.0);
  const auto facts = derive_facts(*d, 4.0);
  EXPECT_EQ(fact(facts, "tokens").value("generation_tokens_per_s")->value, 5.0);
}

TEST(Delta, RestartOrDecreaseIsAResetWithNoDelta) {
  auto restarted = delta_signals(with_counter("100", 10), with_counter("200", 30));
  ASSERT_FALSE(restarted.ok());
  EXPECT_EQ(restarted.error().code, "scrape.reset");
  EXPECT_NE(restarted.error().message.find("restarted"), std::string::npos);
  auto went_down = delta_signals(with_counter("100", 30), with_counter("100", 10));
  ASSERT_FALSE(went_down.ok());
  EXPECT_EQ(went_down.error().code, "scrape.reset");
  EXPECT_NE(went_down.error().message.find("vllm:generation_tokens_total went down from 30 to 10"), std::string::npos)
      << went_down.error().message;
}

}  // namespace
}  // namespace mpo::engines
