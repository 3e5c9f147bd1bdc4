// The implementation of report/render.hpp. Report renderers: Markdown for people, JSON
// (`modelperfobs.report.v1`) for machines, CSV for spreadsheets.
#include "report/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/envelope.hpp"
#include "core/json.hpp"
#include "core/time.hpp"

namespace mpo::report {
namespace {

std::string ms(const std::optional<Summary>& s, double Summary::*q) {
  return s ? fmt::format("{:.1f}", (*s).*q) : "n/a";
}

std::string summary_json(const std::optional<Summary>& s) {
  if (!s) return "null";
  return std::move(JsonObjectWriter()
                       .field("n", static_cast<std::uint64_t>(s->n))
                       .field("p50", s->p50)
                       .field("p90", s->p90)
                       .field("p95", s->p95)
                       .field("p99", s->p99)
                       .field("max", s->max)
                       .field("mean", s->mean))
      .finish();
}

// Built with += only: GCC 12 warns (-Wrestrict, falsely) on `"literal" + std::string` chains.
std::string json_counts(const std::map<std::string, std::size_t>& m) {
  std::string out = "{";
  for (const auto& [k, n] : m) {
    if (out.size() > 1) out += ',';
    out += json_quote(k);
    out += ':';
    out += std::to_string(n);
  }
  out += '}';
  return out;
}

std::string json_array(const std::vector<std::string>& items, bool quote) {
  std::string out = "[";
  for (const auto& item : items) {
    if (out.size() > 1) out += ',';
    out += quote ? json_quote(item) : item;
  }
  out += ']';
  return out;
}

// One object per operation, each opened with the operation's name and request count and
// finished by `rest`.
template <class Stats, class Rest>
std::string per_operation_json(const std::vector<Stats>& all, Rest rest) {
  std::vector<std::string> docs;
  for (const auto& s : all) {
    JsonObjectWriter w;
    w.field("operation", s.operation).field("requests", static_cast<std::uint64_t>(s.requests));
    rest(w, s);
    docs.push_back(std::move(w).finish());
  }
  return json_array(docs, false);
}

std::string apis_json(const std::vector<ApiStats>& apis) {
  return per_operation_json(apis, [](JsonObjectWriter& w, const ApiStats& a) {
    w.raw_field("ttft_ms", summary_json(a.ttft_ms))
        .raw_field("tpot_ms", summary_json(a.tpot_ms))
        .raw_field("itl_p95_ms", summary_json(a.itl_p95_ms))
        .raw_field("e2e_ms", summary_json(a.e2e_ms));
  });
}

std::string others_json(const std::vector<OtherStats>& others) {
  return per_operation_json(others, [](JsonObjectWriter& w, const OtherStats& x) {
    w.raw_field("outcomes", json_counts(x.outcomes))
        .field("error_rate", x.error_rate)
        .raw_field("e2e_ms", summary_json(x.e2e_ms))
        .raw_field("ttfb_ms", summary_json(x.ttfb_ms))
        .field("prompt_tokens", x.prompt_tokens_total);
  });
}

// Late reads that all fall in stalls far apart: when, how long, and what a stall can be. Not the
// bottleneck warning: between the stalls the proxy read on time (report/proxy_stalls.hpp).
std::string stalls_note(const ProxyStalls& ps, bool loop_lines) {
  std::vector<const ProxyStall*> longest;
  for (const auto& s : ps.stalls) longest.push_back(&s);
  std::stable_sort(longest.begin(), longest.end(),
                   [](const ProxyStall* a, const ProxyStall* b) { return a->longest_ms > b->longest_ms; });
  std::string list;
  for (std::size_t i = 0; i < longest.size() && i < 3; ++i) {
    // "17:54:38.774" out of "2026-12-04T17:54:38.774123Z"
    const std::string at = format_rfc3339_us(longest[i]->from_us).substr(11, 12);
    list += fmt::format("{}{:.1f} ms at {} ({} line{})", list.empty() ? "" : ", ", longest[i]->longest_ms, at,
                        longest[i]->lines, longest[i]->lines == 1 ? "" : "s");
  }
  if (longest.size() > 3) list += fmt::format(" and {} more", longest.size() - 3);
  const std::size_t held = ps.held_up_stalls, all = ps.stalls.size();
  // What the stalls were: held up (the loop read nothing at all for most of the wait, from any
  // socket: the lines say so, proxy_lag_quiet_ms), or apart with reads on time between them.
  const std::string held_up =
      held == 0 ? std::string()
                : fmt::format(
                      "in {} the loop read nothing at all, from any socket, for most of the wait: held up "
                      "(descheduled for another process, asleep on an idle CPU that woke late, its machine "
                      "paused as a virtual machine's host does, or one long step of its own), not behind with "
                      "its traffic",
                      held == all ? (all == 1   ? "it"
                                     : all == 2 ? "both"
                                                : "all of them")
                                  : fmt::format("{} of them", held));
  const std::string apart =
      held == all ? std::string()
                  : fmt::format(
                        "never {} {}within {:.0f} ms of each other, with reads on time between them and on most "
                        "lines",
                        kStallsInAStretch, held == 0 ? "" : "of the others ", kStallSeparationMs);
  const std::string reason =
      held == 0 ? apart +
                      ": not a lack of CPU throughout but its loop held up or its machine paused (a virtual "
                      "machine's host, a process of higher priority)"
      : held == all ? held_up
                    : held_up + "; " + apart;
  return fmt::format(
      " (the {} line{} read {:.0f} ms or more late waited through {} stall{} of the proxy, {} when it "
      "read nothing: {}; {}; {})",
      ps.late_lines, ps.late_lines == 1 ? "" : "s", kProxyLagWarnMs, all, all == 1 ? "" : "s",
      all == 1 ? "a moment" : "moments", list, reason,
      loop_lines ? "lines on the loop basis carry that lateness in their times"
                 : "the times rest on the kernel's receive timestamps and stay true");
}

// Where the lines say when: how the late reads fell, for the bottleneck warning.
std::string lateness_detail(const std::optional<ProxyStalls>& ps) {
  if (!ps) return "";
  if (ps->most_lines_late) {
    return fmt::format(", on most lines ({} of {} read {:.0f} ms or more late, in {} stall{}{})", ps->late_lines,
                       ps->timed_lines, kProxyLagWarnMs, ps->stalls.size(), ps->stalls.size() == 1 ? "" : "s",
                       ps->mostly_held_up()
                           ? fmt::format("; on {} of them its loop read nothing at all for most of the wait: held up, "
                                         "not busy with its traffic but waiting for a CPU (held by another process, "
                                         "or idle and slow to wake) or its machine paused",
                                         ps->held_up_lines)
                           : std::string());
  }
  return fmt::format(", in stretches of stalls ({} late lines in {} stalls, {} or more within {:.0f} ms of each other)",
                     ps->late_lines, ps->stalls.size(), kStallsInAStretch, kStallSeparationMs);
}

// The failures by kind; an absent status, type or message is null.
std::string failures_json(const std::vector<FailureKind>& kinds) {
  std::vector<std::string> items;
  for (const auto& k : kinds) {
    JsonObjectWriter w;
    w.field("outcome", k.outcome);
    if (k.http_status != 0) {
      w.field("http_status", k.http_status);
    } else {
      w.null_field("http_status");
    }
    if (!k.error_type.empty()) {
      w.field("error_type", k.error_type);
    } else {
      w.null_field("error_type");
    }
    w.field("requests", static_cast<std::uint64_t>(k.requests));
    if (!k.example_message.empty()) {
      w.field("example_message", k.example_message);
    } else {
      w.null_field("example_message");
    }
    items.push_back(std::move(w).finish());
  }
  return json_array(items, false);
}

std::string stalls_json(const std::optional<ProxyStalls>& ps) {
  if (!ps) return "null";
  std::vector<std::string> items;
  for (const auto& s : ps->stalls) {
    items.push_back(std::move(JsonObjectWriter()
                                  .field("from", format_rfc3339_us(s.from_us))
                                  .field("to", format_rfc3339_us(s.to_us))
                                  .field("longest_ms", s.longest_ms)
                                  .field("lines", static_cast<std::uint64_t>(s.lines))
                                  .field("held_up", s.held_up))
                        .finish());
  }
  return std::move(JsonObjectWriter()
                       .field("late_lines", static_cast<std::uint64_t>(ps->late_lines))
                       .field("timed_lines", static_cast<std::uint64_t>(ps->timed_lines))
                       .field("held_up_lines", static_cast<std::uint64_t>(ps->held_up_lines))
                       .field("stretch", ps->stretch)
                       .field("most_lines_late", ps->most_lines_late)
                       .field("isolated", ps->isolated())
                       .raw_field("stalls", json_array(items, false)))
      .finish();
}

}  // namespace

std::string timing_summary(const GroupStats& g) {
  if (g.timing_bases.empty() && !g.proxy_lag_ms) return "";
  std::string out = "timings from: ";
  std::string bases;
  for (const auto& [k, n] : g.timing_bases) bases += fmt::format("{}{} {}", bases.empty() ? "" : ", ", k, n);
  out += bases.empty() ? std::string("(not said)") : bases;
  if (g.proxy_lag_ms) {
    out += fmt::format("; the proxy's own read lag per line p50 {:.3f} ms, p99 {:.3f} ms, max {:.3f} ms",
                       g.proxy_lag_ms->p50, g.proxy_lag_ms->p99, g.proxy_lag_ms->max);
    const bool loop_lines = g.timing_bases.count("loop") > 0;
    if (g.proxy_lag_ms->p99 >= kProxyLagWarnMs && g.proxy_stalls && g.proxy_stalls->isolated()) {
      out += stalls_note(*g.proxy_stalls, loop_lines);
    } else if (g.proxy_lag_ms->p99 >= kProxyLagWarnMs) {
      // Held up, the loop had nothing of its own to do: it was late to run, not slow (docs/REPORT.md
      // "The proxy's own lateness": on a virtual machine an idle vCPU wakes milliseconds late).
      const bool held_up = g.proxy_stalls && g.proxy_stalls->mostly_held_up();
      out += fmt::format(
          " (**warning**: {}: its event loop read bytes up to {:.1f} ms after they arrived{}, so it forwarded them "
          "that late; {}{})",
          held_up ? "the proxy was late to forward" : "the proxy itself was a bottleneck", g.proxy_lag_ms->max,
          lateness_detail(g.proxy_stalls),
          loop_lines ? "lines on the loop basis carry that lateness in their times; "
                     : "the times rest on the kernel's "
                       "receive timestamps and stay true; ",
          held_up ? "a higher priority (nice) helps where other processes held its CPU; where none did, its CPU "
                    "was idle and woke late (a virtual machine's host halts an idle vCPU): a CPU kept from idling, or "
                    "a guest idle driver that polls before it halts (cpuidle-haltpoll), shortens that"
                  : "give the proxy more CPU");
    }
  } else if (g.timing_bases.count("loop") > 0) {
    out += " (no kernel receive timestamps: the times are when the proxy's loop read the bytes)";
  }
  return out;
}

namespace {

// Text as one cell of a Markdown table: a `|` escaped, a line break or other control byte a space
// (evidence quotes the backend's own error messages, which may hold either).
std::string table_cell(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    if (ch == '|') {
      out += "\\|";
    } else if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

// The TTFT fit's line, with what limits its reading.
std::string fit_md(const GroupStats& g) {
  if (!g.fit) return {};
  std::string o;
  const auto& f = *g.fit;
  // ± a coefficient's 95% interval, as precise as the coefficient is printed.
  const auto pm = [&f](double half, int digits) {
    return f.intervals ? fmt::format(" ± {:.{}f}", half, digits) : std::string();
  };
  // A negative term is subtracted ("34.0 ms - 0.414 ± 0.594 ms/prompt token"), not added as "+ -0.414".
  const auto term = [](double v, int digits) {
    return fmt::format("{} {:.{}f}", v < 0 ? '-' : '+', std::fabs(v), digits);
  };
  fmt::format_to(std::back_inserter(o), "\nTTFT fit: {:.1f} ms", f.a_ms);
  if (f.prompt_varies) {
    fmt::format_to(std::back_inserter(o), " {}{} ms/prompt token", term(f.b_ms_per_token, 3), pm(f.b_ci95_ms, 3));
  }
  if (f.in_flight_varies) {
    fmt::format_to(std::back_inserter(o), " {}{} ms/request in flight", term(f.c_ms_per_in_flight, 1),
                   pm(f.c_ci95_ms, 1));
  }
  fmt::format_to(std::back_inserter(o), " (R² {:.2f}, n {}{}){}\n", f.r2, f.n,
                 f.intervals && (f.prompt_varies || f.in_flight_varies) ? "; ± a 95% interval" : "",
                 f.collinear ? "; in-flight count rose with prompt length, so the two cannot be split" : "");
  if (f.prompt_range_narrow) {
    fmt::format_to(std::back_inserter(o),
                   "Prompts spanned only {:.0f} to {:.0f} tokens: too narrow a range to measure a cost per prompt "
                   "token, so the fit leaves prompt length out (vary prompt lengths, e.g. sweep --input-tokens, "
                   "to measure prefill).\n",
                   f.prompt_min, f.prompt_max);
  }
  if (f.prompt_term_noise()) {
    fmt::format_to(
        std::back_inserter(o),
        "The prompt term is within its noise of 0 (from {:.3f} to {:.3f} ms a token): over prompts of {:.0f} to "
        "{:.0f} tokens TTFT's spread came from elsewhere, so this run cannot tell what a prompt token "
        "costs (vary prompt lengths at one concurrency, e.g. sweep --input-tokens, to measure prefill).\n",
        f.b_ms_per_token - f.b_ci95_ms, f.b_ms_per_token + f.b_ci95_ms, f.prompt_min, f.prompt_max);
  }
  if (f.in_flight_term_noise()) {
    fmt::format_to(std::back_inserter(o),
                   "The in-flight term is within its noise of 0 (from {:.1f} to {:.1f} ms a request): TTFT did not "
                   "follow the number of requests in flight at this proxy.\n",
                   f.c_ms_per_in_flight - f.c_ci95_ms, f.c_ms_per_in_flight + f.c_ci95_ms);
  }
  if ((f.prompt_varies && f.b_ms_per_token < 0 && !f.prompt_term_noise()) ||
      (f.in_flight_varies && f.c_ms_per_in_flight < 0 && !f.in_flight_term_noise())) {
    o += "A negative coefficient says TTFT fell as that quantity rose in this run: something else moved with it "
         "(requests of different shapes mixed, the prefix cache); it is no cost, and no saving.\n";
  }
  if (f.a_ms < 0) {
    o += "The intercept is negative: a straight line does not describe TTFT over this range; read the "
         "coefficients as a trend, not as fixed and per-unit costs.\n";
  }
  if (!g.prompt_bands.empty()) {
    o += "The group mixes short and long prompts: one line over both shapes blends what each costs; each band "
         "above has its own figures and ranking.\n";
  }
  return o;
}

// One group's section: the verdict line, counts, latencies, by API, the fit and the ranking.
std::string group_md(const GroupStats& g) {
  std::string o;
  fmt::format_to(std::back_inserter(o), "\n## {}\n\n", g.key);
  const auto& top = g.ranking.front();
  if (top.score >= 1) {
    fmt::format_to(std::back_inserter(o), "**Likely bottleneck: {}** (score {:.1f}; >= 1 crosses its threshold)\n\n",
                   top.name, top.score);
  } else {
    o += "**No candidate crosses its threshold**: nothing here looks like a bottleneck.\n\n";
  }
  // What the ranking's medians do not weigh, named where the verdict is read.
  std::vector<std::string> also;
  for (const auto& [what, section] : findings_beside_the_verdict(g))
    also.push_back(fmt::format("{} (**{}**)", what, section));
  if (!also.empty()) fmt::format_to(std::back_inserter(o), "Also, below: {}.\n\n", fmt::join(also, "; "));
  fmt::format_to(std::back_inserter(o), "- {} requests over {:.1f} s ({:.2f} req/s); {} streamed, {} not streamed\n",
                 g.requests, g.window_s, g.requests_per_s, g.streamed, g.non_streamed);
  if (g.tool_call_first > 0) {
    fmt::format_to(std::back_inserter(o), "- {} of the streamed answered first with a tool call: {}\n",
                   g.tool_call_first, kToolCallFirstMeaning);
  }
  if (g.no_output > 0) {
    fmt::format_to(std::back_inserter(o),
                   "- {} of the streamed ended without any output, although the engine counted tokens for them: {}\n",
                   g.no_output, kNoOutputMeaning);
  }
  std::string outcomes;
  for (const auto& [k, n] : g.outcomes) outcomes += fmt::format("{}{} {}", outcomes.empty() ? "" : ", ", k, n);
  fmt::format_to(std::back_inserter(o), "- outcomes: {}\n", outcomes);
  if (g.unnamed_model_requests > 0) {
    fmt::format_to(std::back_inserter(o),
                   "- {} of them named no model and got no answer to name one: counted here, with the only model "
                   "these lines name\n",
                   g.unnamed_model_requests);
  }
  if (const auto& w = g.left_before_first_token_ms) {
    fmt::format_to(std::back_inserter(o),
                   "- **TTFT leaves out {} streamed request{} given up before the first token** (the client left, or "
                   "its time limit ran out) after waiting {:.1f} ms p50, {:.1f} ms max: their TTFT was longer than "
                   "that, so the TTFT tail is at least as long as these waits\n",
                   w->n, w->n == 1 ? "" : "s", w->p50, w->max);
  }
  if (g.cut_short > 0 && g.cut_short_tokens) {
    fmt::format_to(
        std::back_inserter(o),
        "- **{} request{} stopped at the length limit before the max_tokens asked for** ({:.0f} tokens "
        "p50, as the server counted them): something other than max_tokens cut {}, most often the "
        "engine's context (llama.cpp: a slot's n_ctx; vLLM: max_model_len); their e2e and output tokens are for "
        "shorter answers than asked\n",
        g.cut_short, g.cut_short == 1 ? "" : "s", g.cut_short_tokens->p50, g.cut_short == 1 ? "it" : "them");
  }
  if (g.e2e_given_up > 0) {
    fmt::format_to(std::back_inserter(o),
                   "- e2e takes the {} request{} given up (the client left, or its time limit ran out) at the moment "
                   "they were: for them a lower bound\n",
                   g.e2e_given_up, g.e2e_given_up == 1 ? "" : "s");
  }
  std::string sources;
  for (const auto& [k, n] : g.token_sources) sources += fmt::format("{}{} {}", sources.empty() ? "" : ", ", k, n);
  fmt::format_to(std::back_inserter(o), "- token counts from: {}{}\n", sources,
                 (g.token_sources.count("estimated") || g.token_sources.count("none"))
                     ? " (**warning**: some counts are estimated or missing)"
                     : "");
  if (auto t = timing_summary(g); !t.empty()) fmt::format_to(std::back_inserter(o), "- {}\n", t);
  fmt::format_to(
      std::back_inserter(o), "- tokens: {} prompt, {} completion{}{}\n", g.prompt_tokens_total,
      g.completion_tokens_total,
      g.output_tokens_per_s ? fmt::format(" ({:.1f} output tok/s over the window)", *g.output_tokens_per_s) : "",
      g.cached_share ? fmt::format("; {:.1f}% of prompt tokens cached", 100 * *g.cached_share) : "");
  o += "\n| ms | p50 | p90 | p95 | p99 | max |\n|---|---|---|---|---|---|\n";
  auto row = [&](const char* name, const std::optional<Summary>& s) {
    fmt::format_to(std::back_inserter(o), "| {} | {} | {} | {} | {} | {} |\n", name, ms(s, &Summary::p50),
                   ms(s, &Summary::p90), ms(s, &Summary::p95), ms(s, &Summary::p99), ms(s, &Summary::max));
  };
  row("TTFT", g.ttft_ms);
  row("TPOT", g.tpot_ms);
  row("ITL p95", g.itl_p95_ms);
  row("e2e", g.e2e_ms);
  row("TTFB", g.ttfb_ms);
  if (const auto note = tail_sample_note(g); !note.empty()) fmt::format_to(std::back_inserter(o), "\n{}\n", note);
  if (!g.apis.empty()) {
    o += "\nBy API (ms):\n\n| API | requests | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | ITL p95 p99 | e2e p99 |\n"
         "|---|---|---|---|---|---|---|---|\n";
    for (const auto& a : g.apis) {
      fmt::format_to(std::back_inserter(o), "| {} | {} | {} | {} | {} | {} | {} | {} |\n", a.operation, a.requests,
                     ms(a.ttft_ms, &Summary::p50), ms(a.ttft_ms, &Summary::p99), ms(a.tpot_ms, &Summary::p50),
                     ms(a.tpot_ms, &Summary::p99), ms(a.itl_p95_ms, &Summary::p99), ms(a.e2e_ms, &Summary::p99));
    }
  }
  if (!g.prompt_bands.empty()) {
    const auto headers = prompt_band_headers();
    std::string rule = "|";
    for (std::size_t i = 0; i < headers.size(); ++i) rule += "---|";
    o += fmt::format("\nBy prompt length (the group mixes short and long prompts; ms):\n\n| {} |\n{}\n",
                     fmt::join(headers, " | "), rule);
    for (const auto& cells : prompt_band_rows(g.prompt_bands)) o += fmt::format("| {} |\n", fmt::join(cells, " | "));
    o += "\nLikely bottleneck by prompt length (each band ranked from its own requests):\n\n";
    for (const auto& b : g.prompt_bands) o += fmt::format("- {}\n", prompt_band_sentence(b));
  }
  if (const auto q = queue_at_times_sentence(g); !q.empty()) o += fmt::format("\n**Queue at times**: {}.\n", q);
  if (const auto d = slow_decode_at_times_sentence(g); !d.empty())
    o += fmt::format("\n**Decode slow at times**: {}.\n", d);
  for (const auto& h : g.held_prompts) o += fmt::format("\n**TTFT tail**: {}.\n", held_prompts_sentence(h));
  if (g.speculation && g.speculation->worth_saying()) {
    o += fmt::format("\n**Speculative decoding** ({}): {}. {}\n", g.speculation->source,
                     speculation_findings(*g.speculation), kSpeculationBaseline);
  }
  if (g.turns) {
    const auto headers = turn_headers();
    std::string rule = "|";
    for (std::size_t i = 0; i < headers.size(); ++i) rule += "---|";
    o += fmt::format("\nBy turn in the conversation (docs/FORMATS.md \"Sessions\"):\n\n| {} |\n{}\n",
                     fmt::join(headers, " | "), rule);
    for (const auto& cells : turn_rows(*g.turns)) o += fmt::format("| {} |\n", fmt::join(cells, " | "));
    if (g.turns->cliff) o += fmt::format("\n**Cache cliff**: {}.\n", cliff_sentence(*g.turns->cliff));
    if (g.turns->collapse && g.turns->collapse->conversations > 0)
      o += fmt::format("\nBy conversation: {}.\n", collapse_sentence(*g.turns->collapse));
    if (g.turns->failure_cliff)
      o += fmt::format("\n**Failure cliff**: {}.\n", failure_cliff_sentence(*g.turns->failure_cliff));
    if (!g.turns->bands.empty()) {
      o += "\nLikely bottleneck by band of turns (each ranked from its own requests):\n\n";
      for (const auto& b : g.turns->bands) o += fmt::format("- {}\n", band_sentence(b));
    }
  }
  o += fit_md(g);
  o += "\n| rank | candidate | score | evidence |\n|---|---|---|---|\n";
  int rank = 0;
  for (const auto& c : g.ranking) {
    if (!shown_in_ranking(c)) continue;
    fmt::format_to(std::back_inserter(o), "| {} | {} | {:.2f} | {} |\n", ++rank, c.name, c.score,
                   table_cell(fmt::format("{}", fmt::join(c.evidence, "; "))));
  }
  return o;
}

}  // namespace

std::string tail_sample_note(const GroupStats& g) {
  std::size_t n = 0;
  for (const auto* s : {&g.ttft_ms, &g.tpot_ms, &g.itl_p95_ms, &g.e2e_ms, &g.ttfb_ms}) {
    if (*s) n = std::max(n, (*s)->n);
  }
  if (n < 2 || n > 101) return {};
  return fmt::format(
      "Each row above has {} requests at most: its p99 lies between its two slowest{}, this run's slowest "
      "requests rather than a tail that more requests would pin down (a p99 rests on more than the two slowest "
      "from 102 requests, a p95 from 22).",
      n, n <= 21 ? ", and so does its p95" : "");
}

std::string queue_at_times_sentence(const GroupStats& g) {
  for (const auto& c : g.ranking) {
    if (c.name == "queueing" && c.score >= 1) return {};
  }
  const auto& e = g.engine_split;
  if (const auto& q = g.engine_queue_time; !e && q && q->over && enough_queued(*q->over, q->requests)) {
    return fmt::format(
        "{:.0f} of the {:.0f} requests the engine finished over {} waited more than {:.0f} ms in its queue ({}, "
        "engine-wide: every client's requests, not only this proxy's), against a mean wait of {:.1f} ms{}",
        *q->over, q->requests, q->window, q->over_bound_ms, q->source, q->mean_ms, queued_at_times_meaning());
  }
  if (!e || !e->queued) return {};
  const std::string what = e->queue_ms       ? fmt::format("{}: the engine's own queue time", e->source)
                           : e->not_streamed ? fmt::format("{}: e2e less the engine's decode and prefill", e->source)
                                             : fmt::format("{}: TTFT - prompt_ms", e->source);
  return queued_at_times_sentence(*e->queued, what);
}

std::string slow_decode_at_times_sentence(const GroupStats& g) {
  for (const auto& c : g.ranking) {
    if (c.name == "decode" && c.score >= 1) return {};
  }
  return g.slow_decode ? slow_decode_sentence(*g.slow_decode) : std::string();
}

std::vector<std::pair<std::string, std::string>> findings_beside_the_verdict(const GroupStats& g) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!queue_at_times_sentence(g).empty())
    out.emplace_back("requests that waited for a slot at times", "Queue at times");
  if (!slow_decode_at_times_sentence(g).empty())
    out.emplace_back("requests whose decode was slow at times", "Decode slow at times");
  if (!g.held_prompts.empty()) out.emplace_back("first tokens held behind longer prompts", "TTFT tail");
  if (g.speculation && g.speculation->worth_saying()) {
    out.emplace_back(g.speculation->gained_nothing()
                         ? "speculative decoding that gained next to nothing"
                         : "speculative decoding that slows the requests whose drafts were rejected",
                     "Speculative decoding");
  }
  return out;
}

std::string render_markdown(const ReportInput& in) {
  std::string o = "# modelperfobs report\n\n";
  fmt::format_to(
      std::back_inserter(o), "{} observations from {} ({} fak lines{}); grouped by {}.\n", in.table.size(),
      fmt::join(in.sources, ", "), in.read.fak_lines,
      in.table.warmup_lines() > 0 ? fmt::format(", {} warm-up lines left out", in.table.warmup_lines()) : std::string(),
      group_by_name(in.options.by));
  if (in.read.invalid_lines > 0 || in.read.torn_last_line || in.read.foreign_lines > 0 || in.read.dropped_lines > 0) {
    fmt::format_to(std::back_inserter(o),
                   "\n> Input problems: {} invalid line(s), {} of another schema, torn last line: {}, {} line(s) "
                   "the proxy dropped (gap records).\n",
                   in.read.invalid_lines, in.read.foreign_lines, in.read.torn_last_line ? "yes (skipped)" : "no",
                   in.read.dropped_lines);
  }
  for (const auto& g : in.groups) o += group_md(g);
  if (!in.others.empty()) {
    o += "\n## Other requests (generate nothing; not ranked)\n\n"
         "| operation | requests | outcomes | e2e p50 ms | e2e p95 ms | e2e p99 ms | prompt tokens |\n"
         "|---|---|---|---|---|---|---|\n";
    for (const auto& x : in.others) {
      std::string outcomes;
      for (const auto& [k, n] : x.outcomes) outcomes += fmt::format("{}{} {}", outcomes.empty() ? "" : ", ", k, n);
      fmt::format_to(std::back_inserter(o), "| {} | {} | {} | {} | {} | {} | {} |\n", x.operation, x.requests, outcomes,
                     ms(x.e2e_ms, &Summary::p50), ms(x.e2e_ms, &Summary::p95), ms(x.e2e_ms, &Summary::p99),
                     x.prompt_tokens_total);
    }
  }
  if (!in.engine_trace_md.empty()) o += "\n" + in.engine_trace_md;
  o += in.comparison_md;
  if (!in.slos.empty()) {
    o += "\n## SLOs\n\n| group | SLO | limit | value | result |\n|---|---|---|---|---|\n";
    for (const auto& s : in.slos) {
      std::string value = s.value ? fmt::format("{}{:.4g}", s.at_least ? ">= " : "", *s.value) : "not measurable";
      if (!s.note.empty()) value += fmt::format(" ({})", s.note);
      fmt::format_to(std::back_inserter(o), "| {} | {} | {} | {} | {} |\n", s.group, s.name, s.limit, value,
                     s.violated ? "**violated**" : "met");
    }
  }
  return o;
}

namespace {

std::string engine_split_json(const EngineSplit& e) {
  JsonObjectWriter split;
  split.field("source", e.source)
      .field("requests", static_cast<std::uint64_t>(e.n))
      .field("of", static_cast<std::uint64_t>(e.of))
      .raw_field("wait_ms", summary_json(e.wait_ms))
      .raw_field("prefill_ms", summary_json(e.prefill_ms))
      .raw_field("head_to_token_ms", summary_json(e.head_to_token_ms));
  if (e.queue_ms) split.raw_field("queue_ms", summary_json(e.queue_ms));
  if (e.outside_ms) split.raw_field("outside_ms", summary_json(e.outside_ms));
  if (e.alone_wait_ms) split.raw_field("alone_wait_ms", summary_json(e.alone_wait_ms));
  if (e.head_rule.empty()) {
    split.null_field("head_rule");
  } else {
    split.field("head_rule", e.head_rule);
  }
  if (e.not_streamed) split.field("not_streamed", true);
  if (const auto& q = e.queued) {
    JsonObjectWriter qw;
    qw.field("threshold_ms", q->threshold_ms)
        .field("requests", static_cast<std::uint64_t>(q->n))
        .field("of", static_cast<std::uint64_t>(q->of))
        .raw_field("wait_ms", summary_json(q->wait_ms))
        .field("ttft_p50_ms", q->ttft_p50_ms)
        .field("others_ttft_p50_ms", q->others_ttft_p50_ms)
        .optional_field("in_flight_p50", q->in_flight_p50)
        .optional_field("others_in_flight_p50", q->others_in_flight_p50);
    if (q->first_start_us > 0) {
      qw.field("first_start", format_rfc3339_us(q->first_start_us))
          .field("last_start", format_rfc3339_us(q->last_start_us));
    }
    split.raw_field("queued_at_times", std::move(qw).finish());
  } else {
    split.null_field("queued_at_times");
  }
  return std::move(split).finish();
}

// A term not in the model is null, never a fitted 0.
std::string ttft_fit_json(const TtftFit& f) {
  JsonObjectWriter fit;
  fit.field("n", static_cast<std::uint64_t>(f.n)).field("a_ms", f.a_ms);
  if (f.prompt_varies) {
    fit.field("b_ms_per_prompt_token", f.b_ms_per_token);
  } else {
    fit.null_field("b_ms_per_prompt_token");
  }
  if (f.in_flight_varies) {
    fit.field("c_ms_per_in_flight", f.c_ms_per_in_flight);
  } else {
    fit.null_field("c_ms_per_in_flight");
  }
  // Each term's 95% half-width, null where the term is not in the model or no degree of freedom is left.
  const auto interval = [&](const char* name, bool in_model, double half) {
    if (in_model && f.intervals) {
      fit.field(name, half);
    } else {
      fit.null_field(name);
    }
  };
  interval("b_ci95_ms", f.prompt_varies, f.b_ci95_ms);
  interval("c_ci95_ms", f.in_flight_varies, f.c_ci95_ms);
  fit.field("r2", f.r2).field("collinear", f.collinear).field("prompt_range_narrow", f.prompt_range_narrow);
  return std::move(fit).finish();
}

// One group's object: counts, latencies, the engine's split, the fit, the ranking, by API.
std::string group_json(const GroupStats& g) {
  std::vector<std::string> ranking;
  for (const auto& c : g.ranking) {
    ranking.push_back(std::move(JsonObjectWriter()
                                    .field("candidate", c.name)
                                    .field("score", c.score)
                                    .raw_field("evidence", json_array(c.evidence, true)))
                          .finish());
  }
  JsonObjectWriter w;
  w.field("key", g.key)
      .field("requests", static_cast<std::uint64_t>(g.requests))
      .raw_field("outcomes", json_counts(g.outcomes))
      .field("window_start", format_rfc3339_us(g.window_start_us))
      .field("window_end", format_rfc3339_us(g.window_end_us))
      .field("requests_per_second", g.requests_per_s)
      .optional_field("output_tokens_per_second", g.output_tokens_per_s)
      .raw_field("ttft_ms", summary_json(g.ttft_ms))
      .raw_field("tpot_ms", summary_json(g.tpot_ms))
      .raw_field("itl_p95_ms", summary_json(g.itl_p95_ms))
      .raw_field("e2e_ms", summary_json(g.e2e_ms))
      .raw_field("ttfb_ms", summary_json(g.ttfb_ms))
      .raw_field("left_before_first_token_ms", summary_json(g.left_before_first_token_ms))
      .field("unnamed_model_requests", static_cast<std::uint64_t>(g.unnamed_model_requests))
      .field("prompt_tokens", g.prompt_tokens_total)
      .field("completion_tokens", g.completion_tokens_total)
      .optional_field("cached_prompt_share", g.cached_share)
      .raw_field("token_sources", json_counts(g.token_sources))
      .raw_field("timing_bases", json_counts(g.timing_bases))
      .raw_field("proxy_lag_ms", summary_json(g.proxy_lag_ms))
      .raw_field("proxy_stalls", stalls_json(g.proxy_stalls))
      .field("streamed", static_cast<std::uint64_t>(g.streamed))
      .field("non_streamed", static_cast<std::uint64_t>(g.non_streamed))
      .field("tool_call_first", static_cast<std::uint64_t>(g.tool_call_first))
      .field("no_output", static_cast<std::uint64_t>(g.no_output))
      .field("error_rate", g.error_rate)
      .field("failure_rate", g.failure_rate)
      .raw_field("failures", failures_json(g.failures))
      .field("cut_short", static_cast<std::uint64_t>(g.cut_short))
      .raw_field("cut_short_tokens", summary_json(g.cut_short_tokens))
      .field("busy_share", g.busy_share);
  if (g.engine_split) w.raw_field("engine_split", engine_split_json(*g.engine_split));
  if (const auto& q = g.engine_queue_time) {
    JsonObjectWriter qw;
    qw.field("source", q->source)
        .field("window", q->window)
        .field("requests", q->requests)
        .field("mean_ms", q->mean_ms)
        .optional_field("over", q->over);
    if (q->over) qw.field("over_bound_ms", q->over_bound_ms);
    w.raw_field("engine_queue_time", std::move(qw).finish());
  } else {
    w.null_field("engine_queue_time");
  }
  if (g.engine_tpot_ms) w.raw_field("engine_tpot_ms", summary_json(g.engine_tpot_ms));
  if (const auto& d = g.interference) {
    JsonObjectWriter dw;
    dw.field("decoding", static_cast<std::uint64_t>(d->decoding))
        .field("overlapped", static_cast<std::uint64_t>(d->overlapped))
        .optional_field("overlapped_tpot_p50_ms", d->overlapped_tpot_p50_ms)
        .optional_field("others_tpot_p50_ms", d->others_tpot_p50_ms)
        .field("overlapped_itl_p50_ms", d->overlapped_itl_p50_ms)
        .field("lost_ms", d->lost_ms)
        .field("e2e_ms", d->e2e_ms)
        .field("share", d->share());
    w.raw_field("decode_interference", std::move(dw).finish());
  }
  if (const auto& d = g.slow_decode) {
    JsonObjectWriter sw;
    sw.field("threshold_ms", d->threshold_ms)
        .field("source", d->source)
        .field("requests", static_cast<std::uint64_t>(d->n))
        .field("of", static_cast<std::uint64_t>(d->of))
        .raw_field("tpot_ms", summary_json(d->tpot_ms))
        .field("others_tpot_p50_ms", d->others_tpot_p50_ms)
        .optional_field("in_flight_p50", d->in_flight_p50)
        .optional_field("others_in_flight_p50", d->others_in_flight_p50)
        .optional_field("behind_prompts", d->behind_prompts);
    if (d->first_start_us > 0) {
      sw.field("first_start", format_rfc3339_us(d->first_start_us))
          .field("last_start", format_rfc3339_us(d->last_start_us));
    }
    w.raw_field("slow_decode_at_times", std::move(sw).finish());
  } else {
    w.null_field("slow_decode_at_times");
  }
  if (g.fit) {
    w.raw_field("ttft_fit", ttft_fit_json(*g.fit));
  } else {
    w.null_field("ttft_fit");
  }
  w.raw_field("ranking", json_array(ranking, false));
  w.raw_field("apis", apis_json(g.apis));
  w.raw_field("turns", turns_json(g.turns));
  w.raw_field("prompt_bands", prompt_bands_json(g.prompt_bands));
  w.raw_field("held_prompts", held_prompts_json(g.held_prompts));
  w.raw_field("speculation", speculation_json(g.speculation));
  return std::move(w).finish();
}

}  // namespace

std::string render_json(const ReportInput& in) {
  std::vector<std::string> group_docs;
  for (const auto& g : in.groups) group_docs.push_back(group_json(g));
  const std::string groups = json_array(group_docs, false);
  std::vector<std::string> slo_docs;
  for (const auto& s : in.slos) {
    slo_docs.push_back(
        std::move(JsonObjectWriter()
                      .field("group", s.group)
                      .field("slo", s.name)
                      .field("limit", s.limit)
                      .optional_field("value", s.value)
                      .field("value_is_lower_bound", s.at_least)
                      .optional_field("note", s.note.empty() ? std::nullopt : std::optional<std::string>(s.note))
                      .field("violated", s.violated))
            .finish());
  }
  const std::string slos = json_array(slo_docs, false);
  const std::string sources = json_array(in.sources, true);
  const bool valid = in.read.invalid_lines == 0 && !in.read.torn_last_line && in.read.dropped_lines == 0;
  std::vector<std::string> why;
  if (in.read.invalid_lines) why.push_back(fmt::format("{} invalid ledger lines skipped", in.read.invalid_lines));
  if (in.read.torn_last_line) why.emplace_back("torn last line skipped");
  if (in.read.dropped_lines)
    why.push_back(fmt::format("{} lines dropped by the proxy (ledger gap)", in.read.dropped_lines));
  JsonObjectWriter doc;
  put_envelope_head(doc, "modelperfobs.report.v1", in.created_at_us, in.tool_version);
  doc.raw_field("inputs", std::move(JsonObjectWriter()
                                        .raw_field("sources", sources)
                                        .field("by", group_by_name(in.options.by))
                                        .field("lines", in.read.lines)
                                        .field("observations", static_cast<std::uint64_t>(in.table.size()))
                                        .field("fak_lines", in.read.fak_lines)
                                        .field("warmup_lines", static_cast<std::uint64_t>(in.table.warmup_lines()))
                                        .field("invalid_lines", in.read.invalid_lines)
                                        .field("foreign_lines", in.read.foreign_lines)
                                        .field("torn_last_line", in.read.torn_last_line)
                                        .field("dropped_lines", in.read.dropped_lines))
                              .finish())
      .raw_field("result", std::move(JsonObjectWriter()
                                         .raw_field("groups", groups)
                                         .raw_field("other_requests", others_json(in.others))
                                         .raw_field("slos", slos)
                                         .raw_field("engine_trace", in.engine_trace_json.empty() ? std::string("null")
                                                                                                 : in.engine_trace_json)
                                         .raw_field("comparison", in.comparison_json.empty() ? std::string("null")
                                                                                             : in.comparison_json))
                               .finish())
      .raw_field("validity", validity_json({valid, std::move(why), {}}));
  return std::move(doc).finish() + "\n";
}

std::string render_csv(const ReportInput& in) {
  std::string o =
      "group,requests,error_rate,ttft_p50_ms,ttft_p95_ms,ttft_p99_ms,tpot_p50_ms,tpot_p95_ms,e2e_p95_ms,"
      "output_tokens_per_second,bottleneck,score\n";
  auto q = [](const std::optional<Summary>& s, double Summary::*f) {
    return s ? fmt::format("{}", (*s).*f) : std::string();
  };
  for (const auto& g : in.groups) {
    std::string key = g.key;
    if (key.find_first_of(",\"\n") != std::string::npos) {
      std::string esc = "\"";
      for (char c : key) {
        esc += c;
        if (c == '"') esc += '"';
      }
      esc += '"';
      key = std::move(esc);
    }
    fmt::format_to(std::back_inserter(o), "{},{},{},{},{},{},{},{},{},{},{},{}\n", key, g.requests, g.error_rate,
                   q(g.ttft_ms, &Summary::p50), q(g.ttft_ms, &Summary::p95), q(g.ttft_ms, &Summary::p99),
                   q(g.tpot_ms, &Summary::p50), q(g.tpot_ms, &Summary::p95), q(g.e2e_ms, &Summary::p95),
                   g.output_tokens_per_s ? fmt::format("{}", *g.output_tokens_per_s) : "", g.ranking.front().name,
                   g.ranking.front().score);
  }
  return o;
}

}  // namespace mpo::report
