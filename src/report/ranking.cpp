// The implementation of report/ranking.hpp. The ranking of a group's likely bottlenecks (errors,
// queueing, prefill, decode, transport, workload, not enough evidence), each scored against its
// threshold (>= 1: the evidence crosses it) with the evidence behind the score, and the engine's
// own split of TTFT the scores prefer to the client-side estimate.
#include "report/ranking.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mpo::report {
namespace {

// Thresholds of the ranking (docs/REPORT.md explains each).
constexpr double kErrorRateThreshold = 0.01;     // errors: 1% of requests
constexpr double kPrefillThresholdMs = 500;      // prefill: median TTFT explained by prompt length
constexpr double kInterferenceShare = 0.25;      // decode: a quarter of its time spent on other prompts
constexpr double kTransportMinTtfbMs = 200;      // transport: a head sent before output that takes this long
constexpr double kHeadWithOutputShare = 0.9;     // a head at 90%+ of TTFT came with the output (held by the server)
constexpr double kBusyShareThreshold = 0.5;      // workload: the proxy saw requests less than half the time
constexpr double kHeadOnAcceptWaitShare = 0.25;  // on accept: TTFB p50 at most this share of the wait p50
constexpr double kHeadRuleToleranceMs = 5;       // TTFT - TTFB within this (or 10%) of the engine's prefill
constexpr double kBelowThreshold = 0.9;          // a score the engine's evidence holds under its threshold

// The median, reordering `v` (no NaN in it) instead of copying it.
double median_in_place(std::span<double> v) {
  if (v.empty()) return 0;
  const auto lo = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), lo, v.end());
  if (v.size() % 2 == 1) return *lo;
  const double hi = *std::min_element(lo + 1, v.end());
  return *lo * (1.0 - 0.5) + hi * 0.5;  // quantile_cont's interpolation at d = 0.5
}

std::string gauge_text(const EngineGauge& g) {
  return fmt::format("max {:.3g}, time-weighted mean {:.2f}, above zero {:.0f}% of the time", g.max, g.mean,
                     100 * g.share_above_zero);
}

// What the requests alone at the proxy until their first token say of the wait: no slot to wait for
// behind the proxy's own requests, so the engine's own work before the prompt and the network.
std::string alone_wait_text(const EngineSplit& e) {
  if (!e.alone_wait_ms) return {};
  constexpr std::string_view kMeaning =
      "no other request of this proxy's competed with them for a slot, so about that much is the engine's own work and "
      "the network, "
      "not a slot (unless clients that bypass the proxy held the slots)";
  if (e.alone_wait_ms->n == e.n)
    return fmt::format("; every one was the only request in flight at this proxy until its first token: {}", kMeaning);
  return fmt::format(
      "; the {} that were the only request in flight at this proxy until their first token waited {:.1f} ms p50 "
      "(p90 {:.1f} ms): {}",
      e.alone_wait_ms->n, e.alone_wait_ms->p50, e.alone_wait_ms->p90, kMeaning);
}

// Queueing: the engine's own numbers decide where the run has them (per request: spans' queue time,
// or TTFT - llama.cpp's prompt_ms; over the window: the engine's queue-time histogram); the
// client-side estimate (TTFT beyond a slow prefill, the fit's in-flight term) only without them,
// and never against a waiting gauge that stayed at zero.
// The engine's own queueing score, where the run has its numbers (per request: spans' queue time,
// or TTFT - llama.cpp's prompt_ms; over the window: the queue-time histogram), with its evidence.
std::optional<double> engine_queue_score(const GroupStats& g, const EngineEvidence* engine, Candidate& c) {
  const auto& e = g.engine_split;
  const double ttft50 = g.ttft_ms ? g.ttft_ms->p50 : 0.0;
  std::optional<double> decided;
  if (e && e->queue_ms && e->not_streamed) {
    decided = std::max(0.0, e->queue_ms->p50) / kQueueThresholdMs;
    c.evidence.push_back(fmt::format(
        "{}: the engine held the request in its queue {:.1f} ms p50 (over {} of {} requests not streamed; p90 "
        "{:.1f} ms)",
        e->source, e->queue_ms->p50, e->n, e->of, e->queue_ms->p90));
  } else if (e && e->queue_ms) {
    decided = std::max(0.0, e->queue_ms->p50) / kQueueThresholdMs;
    c.evidence.push_back(fmt::format(
        "{}: the engine held the request in its queue {:.1f} ms of the {:.1f} ms TTFT p50 (p50 over {} of {} "
        "requests; p90 {:.1f} ms)",
        e->source, e->queue_ms->p50, ttft50, e->n, e->of, e->queue_ms->p90));
  } else if (e && e->not_streamed) {
    decided = std::max(0.0, e->wait_ms.p50) / kQueueThresholdMs;
    c.evidence.push_back(fmt::format(
        "{}: {:.1f} ms p50 passed before the engine began the prompt (the line's e2e less the engine's decode and "
        "prefill, over {} of {} requests; p90 {:.1f} ms): the wait for a slot, the engine's own work "
        "before the prompt (reading and tokenizing the request, its prompt cache) and the network",
        e->source, e->wait_ms.p50, e->n, e->of, e->wait_ms.p90));
  } else if (e) {
    decided = std::max(0.0, e->wait_ms.p50) / kQueueThresholdMs;
    c.evidence.push_back(fmt::format(
        "{}: {:.1f} ms of the {:.1f} ms TTFT p50 passed before the engine began the prompt (TTFT - prompt_ms, p50 "
        "over {} of {} requests; p90 {:.1f} ms): the wait for a slot, the engine's own work before the prompt "
        "(reading and tokenizing the request, its prompt cache) and the network{}",
        e->source, e->wait_ms.p50, ttft50, e->n, e->of, e->wait_ms.p90, alone_wait_text(*e)));
  }
  if (e && e->queued && decided && *decided < 1) c.evidence.push_back(queued_at_times_evidence(*e->queued));
  if (!e && engine && engine->queue_time && engine->queue_time->requests > 0) {
    const EngineQueueTime& q = *engine->queue_time;
    decided = std::max(0.0, q.mean_ms) / kQueueThresholdMs;
    c.evidence.push_back(fmt::format(
        "the engine's queue-time histogram ({}) over {}: the {:.0f} requests it finished waited {:.1f} ms on average "
        "before it scheduled them{} (engine-wide)",
        q.source, engine->window, q.requests, q.mean_ms,
        q.p50_bucket_ms
            ? fmt::format(", the median between {:.0f} and {:.0f} ms", q.p50_bucket_ms->first, q.p50_bucket_ms->second)
            : std::string()));
    if (q.over && *decided < 1 && enough_queued(*q.over, q.requests)) {
      c.evidence.push_back(fmt::format(
          "a queue at times: {:.0f} of those {:.0f} requests waited more than {:.0f} ms in the engine's queue", *q.over,
          q.requests, q.over_bound_ms));
    }
  }
  return decided;
}

// The engine's waiting and running gauges and its preemptions; a waiting gauge at 0 in every scrape
// holds a client-side-only score below its threshold.
void engine_gauge_evidence(const EngineEvidence* engine, bool decided, Candidate& c) {
  if (engine && engine->waiting) {
    const EngineGauge& w = *engine->waiting;
    if (w.max <= 0) {
      c.evidence.push_back(fmt::format(
          "the engine's waiting gauge ({}) was 0 in all {} scrapes over {}: it never held a request waiting when "
          "scraped",
          w.source, w.samples, engine->window));
      if (!decided && c.score >= 1) {
        c.score = kBelowThreshold;
        c.evidence.push_back(
            "the client-side estimate crosses its threshold, but the engine saw no queue: the TTFT beyond the "
            "estimate is more likely a prefill slower than its 1,000 tok/s (or waits shorter than the scrape "
            "interval), so queueing is held below its threshold");
      }
    } else {
      c.evidence.push_back(fmt::format(
          "the engine's waiting gauge ({}) over {}: {}{}", w.source, engine->window, gauge_text(w),
          engine->running
              ? fmt::format("; requests running ({}): {}", engine->running->source, gauge_text(*engine->running))
              : std::string()));
    }
  }
  if (engine && engine->preemptions && *engine->preemptions > 0) {
    c.evidence.push_back(fmt::format(
        "the engine preempted {:.0f} running requests over {} ({}): KV pressure sent them back to its queue",
        *engine->preemptions, engine->window, engine->preemptions_source));
  }
}

// What the TTFT fit says of queueing behind other requests.
void fit_evidence(const GroupStats& g, Candidate& c) {
  const auto pm = [&g] { return g.fit->intervals ? fmt::format(" ± {:.1f}", g.fit->c_ci95_ms) : std::string(); };
  if (g.fit && g.fit->in_flight_term_noise()) {
    c.evidence.push_back(
        fmt::format("fit: TTFT did not follow the requests already in flight ({:.1f}{} ms each, "
                    "within its noise of 0; n {})",
                    g.fit->c_ms_per_in_flight, pm(), g.fit->n));
  } else if (g.fit && g.fit->in_flight_varies && g.fit->c_ms_per_in_flight < 0) {
    // Observational: another factor moved with the count (a mix of request shapes, the prefix cache).
    c.evidence.push_back(
        fmt::format("fit: TTFT did not rise with the requests already in flight ({:.1f}{} ms each, "
                    "R² {:.2f}, n {}): no sign of queueing at this proxy",
                    g.fit->c_ms_per_in_flight, pm(), g.fit->r2, g.fit->n));
  } else if (g.fit && g.fit->in_flight_varies) {
    c.evidence.push_back(fmt::format("fit: each request already in flight adds {:.1f}{} ms to TTFT (R² {:.2f}, n {})",
                                     g.fit->c_ms_per_in_flight, pm(), g.fit->r2, g.fit->n));
  } else if (g.fit && g.fit->collinear) {
    c.evidence.push_back(
        "prompt length and in-flight count rose together: the fit cannot tell queueing from prefill, "
        "so it uses prompt tokens only and queueing is read from TTFT alone");
  } else if (g.fit) {
    c.evidence.push_back(
        "concurrency at this proxy did not vary: queueing behind other clients is read from TTFT alone");
  }
}

Candidate queueing(const GroupStats& g, double excess_median, bool any_ttft, const EngineEvidence* engine) {
  Candidate c{"queueing", 0.0, {}};
  double client = std::max(0.0, excess_median) / kQueueThresholdMs;
  if (g.fit && g.fit->in_flight_varies && !g.fit->in_flight_term_noise() && g.in_flight && g.fit->r2 >= 0.5 &&
      g.fit->c_ms_per_in_flight > 0) {
    client = std::max(client, g.fit->c_ms_per_in_flight * g.in_flight->p90 / kQueueThresholdMs);
  }
  const std::optional<double> decided = engine_queue_score(g, engine, c);  // the engine's score
  if (decided) {
    c.score = *decided;
    if (any_ttft) {
      const bool disagree = (client >= 1) != (*decided >= 1);
      c.evidence.push_back(fmt::format(
          "client-side estimate (TTFT beyond a 1,000 tok/s prefill + {:.0f} ms): {:.0f} ms, score {:.2f}{}{}",
          kStepAllowanceMs, excess_median, client,
          g.fit && g.fit->in_flight_varies ? " with the fit's in-flight term" : "",
          disagree ? "; it disagrees with the engine's own numbers, which decide (the estimate knows neither the "
                     "engine's prefill rate nor its prefix cache)"
                   : ""));
    }
  } else {
    c.score = client;
    if (any_ttft) {
      c.evidence.push_back(
          excess_median >= 0
              ? fmt::format("median TTFT exceeds what its prompt could take to prefill (at 1,000 tok/s, + {:.0f} ms) "
                            "by {:.0f} ms",
                            kStepAllowanceMs, excess_median)
              : fmt::format("median TTFT is {:.0f} ms within what its prompt could take to prefill (at 1,000 tok/s, + "
                            "{:.0f} ms): no sign of a queue",
                            -excess_median, kStepAllowanceMs));
    }
  }
  if (const auto& w = g.left_before_first_token_ms) {
    // Not in the score: their TTFT is only known to be longer than their wait.
    c.evidence.push_back(fmt::format(
        "{} streamed request{} given up before the first token after waiting {:.0f} ms p50, {:.0f} ms max: {} waited "
        "at least that for the engine (a queue, or a prefill that long), and the TTFT figures above leave {} out",
        w->n, w->n == 1 ? " was" : "s were", w->p50, w->max, w->n == 1 ? "it" : "they", w->n == 1 ? "it" : "them"));
  }
  engine_gauge_evidence(engine, decided.has_value(), c);
  fit_evidence(g, c);
  return c;
}

}  // namespace

double median(std::vector<double> v) { return v.empty() ? 0 : *quantile_cont(std::move(v), 0.5); }

std::optional<EngineSplit> engine_split_of(std::span<const EngineTimes> times, std::size_t of, std::string source) {
  std::vector<double> wait, prefill, queue, outside, head_to_token, off_prefill, head_at, alone;
  std::vector<QueueWait> waits;
  for (const EngineTimes& t : times) {
    waits.push_back(QueueWait{t.queue_ms.value_or(t.ttft_ms - t.prefill_ms), t.ttft_ms, t.started_at_us, t.in_flight});
    wait.push_back(t.ttft_ms - t.prefill_ms);
    if (t.alone) alone.push_back(wait.back());
    prefill.push_back(t.prefill_ms);
    if (t.queue_ms) queue.push_back(*t.queue_ms);
    if (t.outside_ms) outside.push_back(*t.outside_ms);
    if (t.ttfb_ms) {
      const double gap = t.ttft_ms - *t.ttfb_ms;
      head_to_token.push_back(gap);
      off_prefill.push_back(std::abs(gap - t.prefill_ms));
      head_at.push_back(*t.ttfb_ms);
    }
  }
  if (wait.empty() || wait.size() * 2 < of) return std::nullopt;
  EngineSplit e;
  e.source = std::move(source);
  e.n = wait.size();
  e.of = of;
  e.wait_ms = *summarize(wait);
  e.prefill_ms = *summarize(prefill);
  // Only when every request of the split says: a summary over some would not be the split's.
  if (queue.size() == e.n) e.queue_ms = summarize(queue);
  if (outside.size() == e.n) e.outside_ms = summarize(outside);
  if (alone.size() >= kMinAloneRequests) e.alone_wait_ms = summarize(alone);
  // The queueing score reads the engine's queue time where every request has one, else the wait.
  if (!e.queue_ms) {
    for (std::size_t i = 0; i < waits.size(); ++i) waits[i].wait_ms = wait[i];
  }
  e.queued = queued_at_times(waits, kQueueThresholdMs);
  if (!head_to_token.empty()) {
    e.head_to_token_ms = summarize(head_to_token);
    const double off50 = median(off_prefill), head50 = e.head_to_token_ms->p50;
    const double prefill50 = e.prefill_ms.p50, wait50 = e.wait_ms.p50;
    const double tolerance = std::max(kHeadRuleToleranceMs, 0.1 * prefill50);
    // Each rule needs the parts it tells apart to be longer than the tolerance: a head that came
    // with the first token is told from one at slot start only when prefill takes time, and a slot's
    // start from the accept only when there was a wait. Each compares a per-request quantity's
    // median, never a difference of two medians (those come from different requests: with a queue
    // the wait's median and the head's moved apart by more than the tolerance on a loaded machine).
    // A head on accept left before the wait: its TTFB is the path to the engine and back, a small
    // part of the wait (at most a quarter of it, or the tolerance).
    if (head50 <= tolerance && prefill50 > 2 * tolerance) {
      e.head_rule = "with_output";
    } else if (wait50 > 2 * tolerance && off50 <= tolerance) {
      e.head_rule = "slot_start";
    } else if (wait50 > 2 * tolerance && median(head_at) <= std::max(tolerance, kHeadOnAcceptWaitShare * wait50)) {
      e.head_rule = "on_accept";
    }
  }
  return e;
}

namespace {

// A group with no TTFT: its requests were not streamed (or answered first with a tool call, which
// dates no first token), and llama.cpp's timings on their lines say
// when the engine began decoding (e2e - predicted_ms: the first token's moment, as the engine
// counted it, before the rest of the body came) and how long the prompt took before that.
std::optional<EngineSplit> engine_split_not_streamed(const RowList& rs) {
  std::vector<EngineTimes> times;
  std::size_t of = 0, tool_call_first = 0;
  for (const Row* r : rs) {
    if (!r->ok() || (r->stream && !r->tool_call_first) || !r->e2e_ms) continue;
    ++of;
    if (r->tool_call_first) ++tool_call_first;
    if (!r->engine_prompt_ms || !r->engine_predicted_ms) continue;
    EngineTimes t;
    t.ttft_ms = *r->e2e_ms - *r->engine_predicted_ms;
    t.prefill_ms = *r->engine_prompt_ms;
    t.started_at_us = r->started_at_us;
    if (r->in_flight_at_start) t.in_flight = static_cast<double>(*r->in_flight_at_start);
    times.push_back(t);
  }
  auto e =
      engine_split_of(times, of,
                      tool_call_first == 0    ? "llama.cpp timings (not streamed)"
                      : tool_call_first == of ? "llama.cpp timings (a tool call first: the line dates no first token)"
                                              : "llama.cpp timings (not streamed, or a tool call first)");
  if (e) e->not_streamed = true;
  return e;
}

}  // namespace

std::optional<EngineSplit> engine_split_of(const RowList& rs) {
  // Every start of the group, in order: a request was alone until its first token when none other
  // started from its start to its first token (one that started at the same microsecond included:
  // a burst's order at the proxy is not the order the engine takes it in).
  std::vector<std::int64_t> starts;
  starts.reserve(rs.size());
  for (const Row* r : rs) starts.push_back(r->started_at_us);
  std::sort(starts.begin(), starts.end());
  const auto alone_until = [&](std::int64_t from, std::int64_t to) {
    return std::upper_bound(starts.begin(), starts.end(), to) - std::lower_bound(starts.begin(), starts.end(), from) ==
           1;
  };
  std::vector<EngineTimes> times;
  std::size_t of = 0;
  for (const Row* r : rs) {
    if (!r->ok() || !r->ttft_ms) continue;
    ++of;
    if (!r->engine_prompt_ms) continue;
    EngineTimes t;
    t.ttft_ms = *r->ttft_ms;
    t.prefill_ms = *r->engine_prompt_ms;
    t.started_at_us = r->started_at_us;
    if (r->in_flight_at_start) t.in_flight = static_cast<double>(*r->in_flight_at_start);
    if (r->ttfb_ms) t.ttfb_ms = *r->ttfb_ms;
    t.alone = r->in_flight_at_start && *r->in_flight_at_start == 0 &&
              alone_until(r->started_at_us, r->started_at_us + static_cast<std::int64_t>(std::ceil(t.ttft_ms * 1000)));
    times.push_back(t);
  }
  if (of == 0) return engine_split_not_streamed(rs);
  return engine_split_of(times, of, "llama.cpp timings.prompt_ms");
}

namespace {

// What the lines say of an outcome's failures: "HTTP 400 exceed_context_size_error (6): "request
// (2898 tokens) exceeds ..."", the three most frequent kinds; empty when they say nothing (no
// status other than 2xx, no type, no message).
std::string failure_details(const GroupStats& g, std::string_view outcome) {
  constexpr std::size_t kShown = 3;
  std::string out;
  std::size_t shown = 0, more = 0;
  for (const auto& k : g.failures) {
    if (k.outcome != outcome) continue;
    const bool status_says = k.http_status != 0 && (k.http_status < 200 || k.http_status > 299);
    if (!status_says && k.error_type.empty() && k.example_message.empty()) continue;
    if (shown == kShown) {
      ++more;
      continue;
    }
    out += shown++ == 0 ? ": " : "; ";
    std::string what = k.http_status != 0 ? fmt::format("HTTP {}", k.http_status) : std::string();
    if (!k.error_type.empty()) what += (what.empty() ? "" : " ") + k.error_type;
    if (what.empty()) what = "no status";
    out += fmt::format("{} ({})", what, k.requests);
    if (!k.example_message.empty()) out += fmt::format(": \"{}\"", k.example_message);
  }
  if (more > 0) out += fmt::format("; and {} more kind{}", more, more == 1 ? "" : "s");
  return out;
}

// Errors and reliability: the requests that failed. A client that left once output had begun is
// listed and not counted: the backend was serving it (a chat UI's stop button, a client's own time
// limit). One that left before its first token counts: it was not served (and its wait is evidence
// of queueing, below).
Candidate errors_candidate(const GroupStats& g) {
  Candidate c{"errors", g.failure_rate / kErrorRateThreshold, {}};
  for (const auto& [outcome, n] : g.outcomes) {
    if (outcome == "ok") continue;
    std::string line = fmt::format("{} of {} requests ended {}", n, g.requests, outcome) + failure_details(g, outcome);
    if (outcome == "client_disconnected") {
      // A cancel and a client's time limit look alike here; either way the backend had not failed.
      line += g.disconnected_after_first_token == n
                  ? " (the client left after output had begun: a cancel or the client's own time limit, not a "
                    "failure; not counted)"
                  : fmt::format(
                        " (the client left before the end; {} of them after output had begun, a cancel or the "
                        "client's own time limit, not a failure: not counted; {} before the first token, not "
                        "served: counted)",
                        g.disconnected_after_first_token, n - g.disconnected_after_first_token);
    }
    c.evidence.push_back(std::move(line));
  }
  if (g.disconnected_after_first_token > 0) {
    c.evidence.push_back(
        fmt::format("failure rate {:.1f}% (threshold {:.0f}%); {:.1f}% with the clients that left "
                    "after output had begun",
                    100 * g.failure_rate, 100 * kErrorRateThreshold, 100 * g.error_rate));
  } else {
    c.evidence.push_back(
        fmt::format("error rate {:.1f}% (threshold {:.0f}%)", 100 * g.failure_rate, 100 * kErrorRateThreshold));
  }
  return c;
}

// Prefill: the engine's own prefill time where it says, else what the prompt length explains of TTFT.
Candidate prefill_candidate(const GroupStats& g, double explained_median, bool any_ttft) {
  const auto& e = g.engine_split;
  Candidate c{"prefill", explained_median / kPrefillThresholdMs, {}};
  if (e) {
    c.score = e->prefill_ms.p50 / kPrefillThresholdMs;
    c.evidence.push_back(fmt::format("{}: the engine's prefill took {:.1f} ms p50, {:.1f} ms p90 (over {} requests){}",
                                     e->source, e->prefill_ms.p50, e->prefill_ms.p90, e->n,
                                     g.prompt_tokens ? fmt::format(" for prompts of median {:.0f} tokens (cached "
                                                                   "ones included; they cost no prefill)",
                                                                   g.prompt_tokens->p50)
                                                     : std::string()));
  } else if (any_ttft && g.prompt_tokens) {
    c.evidence.push_back(
        fmt::format("median TTFT explainable by prompt length: {:.0f} ms for prompts of median {:.0f} tokens",
                    explained_median, g.prompt_tokens->p50));
  }
  if (const auto& f = g.fit; f && f->prompt_varies) {
    const double low = f->b_ms_per_token - f->b_ci95_ms, high = f->b_ms_per_token + f->b_ci95_ms;
    if (f->prompt_term_known() && f->b_ms_per_token > 0) {
      c.evidence.push_back(fmt::format(
          "fit: {:.3f} ± {:.3f} ms per prompt token, an implied prefill rate of {:.0f} tok/s ({:.0f} to {:.0f} at "
          "95%; R² {:.2f})",
          f->b_ms_per_token, f->b_ci95_ms, 1000.0 / f->b_ms_per_token, 1000.0 / high, 1000.0 / low, f->r2));
    } else if (f->prompt_term_noise()) {
      c.evidence.push_back(fmt::format(
          "fit: {:.3f} ± {:.3f} ms per prompt token, within its noise of 0: no prefill rate can be read from this "
          "run's TTFT (prompts of {:.0f} to {:.0f} tokens)",
          f->b_ms_per_token, f->b_ci95_ms, f->prompt_min, f->prompt_max));
    }
  }
  for (const auto& h : g.held_prompts) c.evidence.push_back(held_prompts_evidence(h));
  return c;
}

std::string interference_text(const DecodeInterference& d) {
  return fmt::format(
      "decode behind other requests' prompts: {} of {} requests decoded while another's prompt was being read "
      "({}), at TPOT p50 {:.1f} ms against a median gap of their own of {:.1f} ms{}; "
      "{:.1f} s of their decode went beyond that pace within those prompts' windows, {:.0f}% of the decoding "
      "requests' time ({:.1f} s; threshold {:.0f}%): the engine reads a prompt in the same batches as the decode "
      "steps (llama.cpp: up to --ubatch-size tokens a step; vLLM: chunked prefill, --max-num-batched-tokens), so a "
      "long prompt holds up every decode beside it",
      d.overlapped, d.decoding, d.source, d.overlapped_tpot_p50_ms.value_or(0), d.overlapped_itl_p50_ms,
      d.others_tpot_p50_ms ? fmt::format(" (TPOT p50 {:.1f} ms for the others)", *d.others_tpot_p50_ms) : "",
      d.lost_ms / 1000, 100 * d.share(), d.e2e_ms / 1000, 100 * kInterferenceShare);
}

// Decode: TPOT against its threshold, what each request in flight adds to it, and what other
// requests' prompts held it up.
Candidate decode_candidate(const GroupStats& g) {
  Candidate c{"decode", g.tpot_ms ? g.tpot_ms->p50 / kTpotThresholdMs : 0.0, {}};
  if (g.tpot_ms) {
    c.evidence.push_back(fmt::format("TPOT p50 {:.1f} ms ({:.1f} tok/s per stream), p95 {:.1f} ms; threshold {:.0f} ms",
                                     g.tpot_ms->p50, 1000.0 / g.tpot_ms->p50, g.tpot_ms->p95, kTpotThresholdMs));
  } else if (const auto& e = g.engine_tpot_ms) {
    c.score = e->p50 / kTpotThresholdMs;
    c.evidence.push_back(fmt::format(
        "{}: the engine's decode took {:.1f} ms p50 per token after the first ({:.1f} tok/s per request), p95 "
        "{:.1f} ms, over {} requests; threshold {:.0f} ms",
        g.engine_split ? g.engine_split->source : std::string("the engine's own times"), e->p50, 1000.0 / e->p50,
        e->p95, e->n, kTpotThresholdMs));
  }
  if (const auto& s = g.speculation) {
    // First where it says decode costs more than it would without the draft.
    c.evidence.insert(s->worth_saying() ? c.evidence.begin() : c.evidence.end(), speculation_sentence(*s));
  }
  if (const auto& d = g.interference) {
    const bool decides = d->share() / kInterferenceShare > c.score;
    c.score = std::max(c.score, d->share() / kInterferenceShare);
    // Said first where it decides the score (a band's sentence shows the first line).
    c.evidence.insert(decides ? c.evidence.begin() : c.evidence.end(), interference_text(*d));
  }
  if (g.slow_decode && c.score < 1) c.evidence.push_back(slow_decode_evidence(*g.slow_decode));
  if (const auto& slope = g.tpot_in_flight_slope_ms) {
    const auto& half = g.tpot_in_flight_slope_ci95_ms;
    const std::string pm = half ? fmt::format(" ± {:.2f}", *half) : std::string();
    if (half && std::fabs(*slope) <= *half) {
      c.evidence.push_back(fmt::format(
          "TPOT did not follow the requests in flight ({:+.2f}{} ms per request, within its noise of 0)", *slope, pm));
    } else {
      c.evidence.push_back(
          *slope < 0 ? fmt::format("TPOT did not rise with the requests in flight ({:+.2f}{} ms per request): no "
                                   "batching cost seen",
                                   *slope, pm)
                     : fmt::format("TPOT changes {:+.2f}{} ms per request in flight (batching cost)", *slope, pm));
    }
  }
  return c;
}

// Transport: what passed outside the engine, where the evidence can separate it from the wait for a slot.
Candidate transport_candidate(const GroupStats& g) {
  const auto& e = g.engine_split;
  Candidate c{"transport", 0.0, {}};
  if (e && e->outside_ms && e->not_streamed) {
    c.score = std::max(0.0, e->outside_ms->p50) / kTransportMinTtfbMs;
    c.evidence.push_back(fmt::format(
        "{}: {:.1f} ms of e2e (p50; p90 {:.1f} ms) passed outside the engine (the line's e2e - the engine's own, "
        "requests not streamed): the network, the proxy, the server's HTTP layer and tokenization; threshold {:.0f} "
        "ms",
        e->source, e->outside_ms->p50, e->outside_ms->p90, kTransportMinTtfbMs));
  } else if (e && e->outside_ms) {
    c.score = std::max(0.0, e->outside_ms->p50) / kTransportMinTtfbMs;
    c.evidence.push_back(fmt::format(
        "{}: {:.1f} ms of TTFT (p50; p90 {:.1f} ms) passed outside the engine (the line's TTFT - the engine's own "
        "TTFT): the network, the proxy, the server's HTTP layer and tokenization; threshold {:.0f} ms",
        e->source, e->outside_ms->p50, e->outside_ms->p90, kTransportMinTtfbMs));
  } else if (e && e->head_rule == "slot_start") {
    c.evidence.push_back(fmt::format(
        "not identifiable: the response head came when the engine's slot started (TTFT - TTFB p50 {:.1f} ms = its "
        "prompt_ms p50 {:.1f} ms), so TTFB (p50 {:.1f} ms) is the wait for a slot and the engine's own work "
        "before the prompt, not the network; the network takes at most the {:.1f} ms (p50) before the engine began the "
        "prompt, and nothing in these requests "
        "separates it",
        e->head_to_token_ms->p50, e->prefill_ms.p50, g.ttfb_ms ? g.ttfb_ms->p50 : 0.0, e->wait_ms.p50));
  } else if (e && e->head_rule.empty() && e->wait_ms.p50 < kTransportMinTtfbMs) {
    c.evidence.push_back(fmt::format(
        "at most {:.1f} ms (p50) passed before the engine began the prompt ({}), the network's share included: "
        "below the {:.0f} ms threshold whatever its share",
        std::max(0.0, e->wait_ms.p50), e->source, kTransportMinTtfbMs));
  } else if (e && e->head_rule.empty()) {
    c.evidence.push_back(fmt::format(
        "not identifiable: {:.1f} ms (p50) passed before the engine began the prompt, and nothing in these requests "
        "separates the network's share of it from the wait for a slot",
        e->wait_ms.p50));
  } else if (g.ttfb_ms && g.ttft_ms && g.ttft_ms->p50 > 0) {
    const double share = g.ttfb_ms->p50 / g.ttft_ms->p50;
    if (share >= kHeadWithOutputShare) {
      // llama.cpp (and others) send the head together with the first token: a late head is the
      // server's wait for output, not the network's.
      c.evidence.push_back(fmt::format(
          "the response head arrives with the first token (TTFB p50 {:.1f} ms, {:.0f}% of TTFT): the server "
          "holds its head until it has output, so TTFB says nothing about the network; nothing in these requests "
          "separates the network from the server (calls that generate nothing, such as GET /v1/models, or the "
          "engine's own spans: --traces, would)",
          g.ttfb_ms->p50, 100 * share));
    } else {
      // The head came before the output: what it took is the path to the server and back.
      c.score = g.ttfb_ms->p50 / kTransportMinTtfbMs;
      c.evidence.push_back(fmt::format(
          "the response head, sent before any output, takes {:.1f} ms (p50; {:.0f}% of TTFT); threshold {:.0f} ms",
          g.ttfb_ms->p50, 100 * share, kTransportMinTtfbMs));
    }
  }
  return c;
}

// Workload: how much of the window the client left the engine idle.
Candidate workload_candidate(const GroupStats& g) {
  Candidate c{"workload", (1.0 - g.busy_share) / kBusyShareThreshold, {}};
  c.evidence.push_back(
      fmt::format("requests were in flight {:.0f}% of the {:.1f} s window: the client left the engine idle "
                  "{:.0f}% of the time",
                  100 * g.busy_share, g.window_s, 100 * (1 - g.busy_share)));
  if (c.score < 1) c.score *= 0.5;  // below its threshold, idle time says little
  return c;
}

// Not enough evidence: nothing streamed, no TTFT or TPOT measured, no token counts.
Candidate not_enough_evidence_candidate(const GroupStats& g) {
  Candidate c{"not_enough_evidence", 0.0, {}};
  // Streamed requests whose first event was a tool call date no first token (Row::tool_call_first),
  // nor do those that ended without output (Row::no_output).
  const std::size_t timed = g.streamed - g.tool_call_first - g.no_output;
  std::string none_timed = g.streamed == 0 ? std::string("no streamed requests") : std::string();
  if (g.tool_call_first > 0) {
    none_timed = fmt::format("{} of the {} streamed requests answered first with a tool call ({})", g.tool_call_first,
                             g.streamed, kToolCallFirstMeaning);
  }
  if (g.no_output > 0) {
    none_timed += none_timed.empty() ? fmt::format("{} of the {} streamed requests", g.no_output, g.streamed)
                                     : fmt::format(" and {}", g.no_output);
    none_timed += fmt::format(" ended without any output ({})", kNoOutputMeaning);
  }
  if (timed == 0 && g.engine_split && g.engine_split->not_streamed) {
    // The engine's own timings stand in: the verdict rests on them, and says so.
    c.evidence.push_back(fmt::format(
        "{}: the proxy measured no TTFT or TPOT; the engine's own times ({}) on {} of {} of them stand in (the wait "
        "before the prompt, the prefill, the decode per token: above){}",
        none_timed, g.engine_split->source, g.engine_split->n, g.engine_split->of,
        g.streamed == 0 ? "; stream to see them as the client did" : ""));
  } else if (g.streamed == 0) {
    c.score = 1.0;
    c.evidence.push_back("no streamed requests: TTFT and TPOT cannot be measured; turn on streaming");
  } else if (timed == 0) {
    c.score = 1.0;
    c.evidence.push_back(fmt::format(
        "{}: TTFT and TPOT cannot be measured from the client's side; the engine's own per-request times can "
        "(llama.cpp's timings on the lines; vLLM's spans, report --traces)",
        none_timed));
  }
  if (timed > 0 && (!g.ttft_ms || !g.tpot_ms)) {
    // fak's rule 3 (docs/FAK.md 2.3, `missing-stream-timing`): streamed rows that carry no TTFT or
    // no TPOT cannot separate prefill from decode.
    c.score = 1.0;
    c.evidence.push_back(fmt::format(
        "{} streamed requests but no {} measured (fak: missing-stream-timing): stream with "
        "stream_options.include_usage (or proxy --usage inject) and at least 2 output tokens to separate prefill "
        "from decode",
        timed,
        !g.ttft_ms && !g.tpot_ms ? "TTFT or TPOT"
        : !g.ttft_ms             ? "TTFT"
                                 : "TPOT"));
    if (g.streamed_unread > 0) {
      c.evidence.push_back(fmt::format(
          "{} of them streamed on paths of no API whose events the proxy reads (operation other: not an OpenAI, "
          "Responses or Anthropic Messages path; llama.cpp's own /completion is one): their tokens can come from "
          "the engine's timings, never a first token; send them to /v1/completions or /v1/chat/completions",
          g.streamed_unread));
    }
  }
  const std::size_t none = g.token_sources.count("none") ? g.token_sources.at("none") : 0;
  if (g.requests > 0 && none * 2 > g.requests) {
    c.score = std::max(c.score, 0.9);
    c.evidence.push_back(
        fmt::format("{} of {} requests have no token counts; ask for usage (proxy --usage inject)", none, g.requests));
  }
  return c;
}

}  // namespace

std::vector<Candidate> rank(const GroupStats& g, std::span<double> excess, std::span<double> explained,
                            const EngineEvidence* engine) {
  // Queueing and prefill, from TTFT against what the prompt length could explain.
  const bool any_ttft = !excess.empty();
  const double excess_median = median_in_place(excess), explained_median = median_in_place(explained);
  std::vector<Candidate> out;
  out.push_back(errors_candidate(g));
  out.push_back(queueing(g, excess_median, any_ttft, engine));
  out.push_back(prefill_candidate(g, explained_median, any_ttft));
  out.push_back(decode_candidate(g));
  out.push_back(transport_candidate(g));
  out.push_back(workload_candidate(g));
  out.push_back(not_enough_evidence_candidate(g));
  std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  return out;
}

void bound_transport_by_calls_that_generate_nothing(GroupStats& g, const std::vector<OtherStats>& others) {
  const OtherStats* fastest = nullptr;
  for (const OtherStats& o : others) {
    if (!o.ttfb_ms || o.ttfb_ms->n < kMinCallsForTransport) continue;
    if (fastest == nullptr || o.ttfb_ms->p50 < fastest->ttfb_ms->p50) fastest = &o;
  }
  if (fastest == nullptr || (g.engine_split && g.engine_split->outside_ms)) return;
  for (Candidate& c : g.ranking) {
    if (c.name != "transport") continue;
    const double p50 = fastest->ttfb_ms->p50;
    c.score = std::max(c.score, p50 / kTransportMinTtfbMs);
    c.evidence.push_back(fmt::format(
        "calls that generate nothing ({}, {} of them) got their response head in {:.1f} ms p50 (p90 {:.1f} ms): "
        "no slot and no prefill in that, so the network and the server's HTTP layer take about that; threshold "
        "{:.0f} ms",
        fastest->operation, fastest->ttfb_ms->n, p50, fastest->ttfb_ms->p90, kTransportMinTtfbMs));
  }
  std::stable_sort(g.ranking.begin(), g.ranking.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
}

}  // namespace mpo::report
