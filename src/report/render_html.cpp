// `report --format html`: one self-contained page (no scripts, no network) through the shared
// presentation layer (src/present): a header that says what was read, then one section per group
// with its verdict, tables (percentiles, ranking, APIs, load levels, TTFT's parts) and charts
// (latency distributions with the per-request ITL, TTFT against prompt tokens with the fit drawn
// honestly, latency and requests in flight over time, output tokens/s, latency by load level), the
// requests that generate nothing apart, the comparison with a baseline when asked for.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/text.hpp"
#include "core/time.hpp"
#include "present/chart.hpp"
#include "present/page.hpp"
#include "report/render.hpp"

namespace mpo::report {
namespace {

using present::Axis;
using present::Chart;
using present::Mark;
using present::Point;
using present::Scale;
using present::Series;
using present::Table;

std::vector<Point> cdf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<Point> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back({v[i], static_cast<double>(i + 1) / static_cast<double>(v.size())});
  return out;
}

std::string ms(const std::optional<Summary>& s, double Summary::*q) {
  return s ? fmt::format("{:.1f}", (*s).*q) : "n/a";
}

Table percentile_table(const GroupStats& g) {
  Table t({"ms", "requests", "p50", "p90", "p95", "p99", "max"});
  for (const auto& [name, summary] :
       {std::pair{"TTFT", &g.ttft_ms}, std::pair{"TPOT", &g.tpot_ms}, std::pair{"ITL p95 (per request)", &g.itl_p95_ms},
        std::pair{"e2e", &g.e2e_ms}, std::pair{"TTFB (response head)", &g.ttfb_ms}}) {
    const auto& s = *summary;
    t.row({name, s ? std::to_string(s->n) : "0", ms(s, &Summary::p50), ms(s, &Summary::p90), ms(s, &Summary::p95),
           ms(s, &Summary::p99), ms(s, &Summary::max)});
  }
  return t;
}

// A load level: the sweep's point when the lines name one, else the requests in flight when each
// started (itself included) in powers of two: 1, 2-3, 4-7, ...
struct Level {
  std::string name;
  std::optional<double> x;  // where it sits on a chart's axis
  std::vector<double> ttft, tpot, e2e;
  std::size_t requests = 0, failed = 0;
};

bool names_points(const RowList& rs) {
  return std::any_of(rs.begin(), rs.end(), [](const Row* r) { return r->phase != 0; });
}

std::vector<Level> load_levels(const RowTable& table, const RowList& rs) {
  const bool by_point = names_points(rs);
  std::map<std::uint16_t, std::size_t> index;
  std::vector<Level> levels;
  std::map<int, std::size_t> by_band;
  for (const auto* r : rs) {
    Level* l = nullptr;
    if (by_point) {
      auto [it, fresh] = index.emplace(r->phase, levels.size());
      if (fresh) {
        Level nl;
        const auto phase = table.phase_name(r->phase);
        nl.name = phase.empty() ? "(no point)" : std::string(phase);
        const auto eq = phase.find('=');
        if (eq != std::string_view::npos) {
          const std::string number(phase.substr(eq + 1));
          char* end = nullptr;
          const double v = std::strtod(number.c_str(), &end);
          if (end != number.c_str() && *end == '\0') nl.x = v;
        }
        levels.push_back(std::move(nl));
      }
      l = &levels[it->second];
    } else {
      if (!r->in_flight_at_start) continue;
      const auto n = std::max<std::int64_t>(1, *r->in_flight_at_start + 1);
      const int band = static_cast<int>(std::floor(std::log2(static_cast<double>(n))));
      auto [it, fresh] = by_band.emplace(band, levels.size());
      if (fresh) {
        const std::int64_t lo = std::int64_t{1} << band, hi = (std::int64_t{1} << (band + 1)) - 1;
        Level nl;
        nl.name = lo == hi ? fmt::format("{} in flight", lo) : fmt::format("{}-{} in flight", lo, hi);
        nl.x = static_cast<double>(lo);
        levels.push_back(std::move(nl));
      }
      l = &levels[it->second];
    }
    ++l->requests;
    if (!r->ok()) ++l->failed;
    if (r->ttft_ms) l->ttft.push_back(*r->ttft_ms);
    if (r->tpot_ms) l->tpot.push_back(*r->tpot_ms);
    if (r->e2e_ms) l->e2e.push_back(*r->e2e_ms);
  }
  if (!by_point) std::sort(levels.begin(), levels.end(), [](const Level& a, const Level& b) { return a.x < b.x; });
  return levels;
}

std::string load_level_view(const RowTable& table, const RowList& rs) {
  auto levels = load_levels(table, rs);
  std::size_t populated = 0;
  for (const auto& l : levels) populated += l.requests >= 5 ? 1 : 0;
  if (populated < 2) return {};
  const bool by_point = names_points(rs);
  Table t({by_point ? "sweep point" : "load level", "requests", "failed", "TTFT p50", "TTFT p99", "TPOT p50",
           "TPOT p99", "e2e p99"});
  Series ttft99{"TTFT p99", {}, Mark::kLineDots, ""}, tpot99{"TPOT p99", {}, Mark::kLineDots, ""};
  Series ttft50{"TTFT p50", {}, Mark::kLineDots, ""};
  std::vector<double> xs;
  for (auto& l : levels) {
    const auto a = summarize(l.ttft), b = summarize(l.tpot), e = summarize(l.e2e);
    t.row({l.name, std::to_string(l.requests), std::to_string(l.failed), ms(a, &Summary::p50), ms(a, &Summary::p99),
           ms(b, &Summary::p50), ms(b, &Summary::p99), ms(e, &Summary::p99)});
    if (!l.x) continue;
    xs.push_back(*l.x);
    if (a) ttft99.points.push_back({*l.x, a->p99}), ttft50.points.push_back({*l.x, a->p50});
    if (b) tpot99.points.push_back({*l.x, b->p99});
  }
  std::string o = present::paragraph(
      by_point ? "The ledger spans several load points of a sweep: each one's latency apart."
               : "Requests grouped by how many were in flight when each started (itself included): latency at "
                 "each load level this ledger saw.",
      "note");
  o += t.html("levels");
  if (xs.size() >= 2) {
    std::vector<double> ys;
    for (const auto& s : {ttft99, ttft50, tpot99})
      for (const auto& p : s.points) ys.push_back(p.y);
    Chart c(by_point ? "Latency by sweep point" : "Latency by load level",
            Axis{by_point ? "load point" : "requests in flight (band's lower end)", present::scale_for_counts(xs)},
            Axis{"ms", present::scale_for(ys)});
    c.add(ttft50).add(ttft99).add(tpot99);
    o += c.svg();
  }
  return o;
}

// TTFT's parts where the lines measured them: until the response head (TTFB), then until the first
// token. A server that holds its head until it has output (llama.cpp) makes the second part ~0.
std::string ttft_parts(const RowList& rs) {
  std::vector<double> head, rest;
  for (const auto* r : rs) {
    if (!r->ttft_ms || !r->ttfb_ms) continue;
    head.push_back(*r->ttfb_ms);
    rest.push_back(std::max(0.0, *r->ttft_ms - *r->ttfb_ms));
  }
  const auto h = summarize(head), f = summarize(rest);
  if (!h || !f) return {};
  Table t({"TTFT part (ms)", "p50", "p90", "p99"});
  t.row({"request sent to response head (TTFB)", ms(h, &Summary::p50), ms(h, &Summary::p90), ms(h, &Summary::p99)});
  t.row({"response head to first token", ms(f, &Summary::p50), ms(f, &Summary::p90), ms(f, &Summary::p99)});
  // What the split can say depends on where the time went (against llama.cpp, whose head comes
  // just before or with its first token, most of TTFT passes before the head).
  const char* reading =
      f->p50 < 0.05 * std::max(h->p50, 1e-9)
          ? "The head came with the first token: this server holds its response head until it has output, so the "
            "split says nothing about queue against prefill here."
      : h->p50 >= f->p50
          ? "Most of TTFT passed before the response head: a server that holds its head until it has output puts "
            "its queue and prefill there, so this split cannot tell them from the network; the engine's own "
            "timings (llama.cpp's timings, engine spans with --traces) can."
          : "The head came early and most of TTFT came after it: that wait is the engine's (queue and prefill), "
            "not the network's.";
  return t.html("ttft-parts") + present::paragraph(reading, "note");
}

Chart fit_chart(const GroupStats& g, const RowList& rs) {
  // With a two-variable fit, a point's TTFT less its in-flight effect (c x (in flight - mean)) is
  // what the prompt term alone predicts (a partial-residual plot): the line then fits the dots.
  const bool partial = g.fit && g.fit->prompt_varies && g.fit->in_flight_varies;
  const double mean_inflight = g.in_flight ? g.in_flight->mean : 0;
  std::vector<Point> pts;
  double max_prompt = 0;
  for (const auto* r : rs) {
    if (!r->ttft_ms || !r->prompt_tokens) continue;
    double y = *r->ttft_ms;
    if (partial && r->in_flight_at_start)
      y -= g.fit->c_ms_per_in_flight * (static_cast<double>(*r->in_flight_at_start) - mean_inflight);
    pts.push_back({static_cast<double>(*r->prompt_tokens), y});
    max_prompt = std::max(max_prompt, static_cast<double>(*r->prompt_tokens));
  }
  Chart c(partial ? "TTFT against prompt tokens, the in-flight effect taken out" : "TTFT against prompt tokens",
          Axis{"prompt tokens"}, Axis{partial ? "TTFT less in-flight effect (ms)" : "TTFT (ms)"});
  c.add({"requests", std::move(pts), Mark::kDots, "#1f77b4"});
  if (g.fit && g.fit->prompt_varies) {
    const auto& f = *g.fit;
    auto at = [&](double p) { return f.a_ms + f.b_ms_per_token * p + f.c_ms_per_in_flight * mean_inflight; };
    c.add({fmt::format("fit, R² {:.2f}", f.r2), {{0, at(0)}, {max_prompt, at(max_prompt)}}, Mark::kLine, "#ff7f0e"});
    std::string note = partial
                           ? fmt::format(
                                 "Each dot is a request's TTFT less {:.2f} ms per request in flight above the mean "
                                 "({:.1f}), so the line (the fit at the mean in flight) can be read against the dots; "
                                 "R² is the two-variable fit's.",
                                 f.c_ms_per_in_flight, mean_inflight)
                           : "The line is the least-squares fit of TTFT on prompt tokens.";
    if (f.prompt_term_noise()) {
      note += fmt::format(
          " Its slope, {:.3f} ± {:.3f} ms a prompt token (95%), is within its noise of 0: it says "
          "nothing of what a prompt token costs.",
          f.b_ms_per_token, f.b_ci95_ms);
    }
    c.note(std::move(note));
  } else if (g.fit && g.fit->prompt_range_narrow) {
    c.note(
        fmt::format("No line: the prompts spanned {:.0f}-{:.0f} tokens, too narrow a range to carry a per-token "
                    "cost.",
                    g.fit->prompt_min, g.fit->prompt_max));
  } else {
    c.note("No line: the prompt lengths did not vary.");
  }
  return c;
}

std::string charts_for(const GroupStats& g, const RowList& rs) {
  std::vector<double> ttft, tpot, itl, e2e_all;
  std::vector<Point> e2e_t;
  std::vector<std::pair<std::int64_t, int>> edges;
  for (const auto* r : rs) {
    if (r->ttft_ms) ttft.push_back(*r->ttft_ms);
    if (r->tpot_ms) tpot.push_back(*r->tpot_ms);
    if (r->itl_p95_ms) itl.push_back(*r->itl_p95_ms);
    const double t = static_cast<double>(r->started_at_us - g.window_start_us) / 1e6;
    if (r->e2e_ms) e2e_t.push_back({t, *r->e2e_ms}), e2e_all.push_back(*r->e2e_ms);
    edges.emplace_back(r->started_at_us, +1);
    edges.emplace_back(r->ended_at_us.value_or(r->started_at_us), -1);
  }
  std::sort(edges.begin(), edges.end());
  std::vector<Point> inflight;
  int level = 0;
  for (const auto& [t, d] : edges) {
    level += d;
    inflight.push_back({static_cast<double>(t - g.window_start_us) / 1e6, static_cast<double>(level)});
  }
  // Output tokens per second in 30 bins over the window, by completion time.
  constexpr int kBins = 30;
  std::vector<double> bins(kBins, 0.0);
  const double width_s = std::max(g.window_s / kBins, 1e-6);
  for (const auto* r : rs) {
    if (!r->completion_tokens || !r->ended_at_us) continue;
    const auto b = std::min<std::size_t>(
        kBins - 1, static_cast<std::size_t>(static_cast<double>(*r->ended_at_us - g.window_start_us) / 1e6 / width_s));
    bins[b] += static_cast<double>(*r->completion_tokens) / width_s;
  }
  std::vector<Point> rate;
  for (int i = 0; i < kBins; ++i) rate.push_back({(i + 0.5) * width_s, bins[static_cast<std::size_t>(i)]});

  std::vector<double> all_ms = ttft;
  all_ms.insert(all_ms.end(), tpot.begin(), tpot.end());
  all_ms.insert(all_ms.end(), itl.begin(), itl.end());
  Chart dist("Latency distributions", Axis{"ms", present::scale_for(all_ms)}, Axis{"share of requests"});
  dist.add({"TTFT", cdf(ttft), Mark::kLine, "#1f77b4"})
      .add({"TPOT", cdf(tpot), Mark::kLine, "#d62728"})
      .add({"ITL p95 per request", cdf(itl), Mark::kLine, "#2ca02c"})
      .note(
          "Cumulative share of requests at or under each time. ITL: each request's own p95 gap between tokens, so "
          "the curve shows how many requests had stalls, not every gap.");
  Chart over_time("End-to-end latency over time", Axis{"seconds since the window's start"},
                  Axis{"e2e (ms)", present::scale_for(e2e_all)});
  over_time.add({"requests", std::move(e2e_t), Mark::kDots, "#2ca02c"});
  Chart load("Requests in flight over time", Axis{"seconds since the window's start"}, Axis{"requests in flight"});
  load.add({"in flight", std::move(inflight), Mark::kStep, "#9467bd"});
  Chart tokens("Output tokens per second over time", Axis{"seconds since the window's start"}, Axis{"tokens/s"});
  tokens.add({"output tok/s", std::move(rate), Mark::kLine, "#8c564b"})
      .note(fmt::format("Completion tokens of the requests that ended in each {:.2f} s bin.", width_s));
  return dist.svg() + fit_chart(g, rs).svg() + over_time.svg() + load.svg() + tokens.svg();
}

// TTFT and the cached share of the prompt by turn, the cliff marked where there is one.
std::string turn_charts(const TurnView& v) {
  std::vector<double> turns, ms;
  std::vector<Point> ttft, share;
  for (const auto& t : v.turns) {
    turns.push_back(t.turn);
    if (t.ttft_ms) ttft.push_back({static_cast<double>(t.turn), t.ttft_ms->p50}), ms.push_back(t.ttft_ms->p50);
    if (t.cached_share) share.push_back({static_cast<double>(t.turn), 100 * *t.cached_share});
  }
  const auto x = present::scale_for_counts(turns);
  Chart by_ttft("TTFT by turn", Axis{"turn in the conversation", x}, Axis{"TTFT p50 (ms)", present::scale_for(ms)});
  by_ttft.add({"TTFT p50", std::move(ttft), Mark::kLineDots, "#1f77b4"});
  Chart by_share("Cached share of the prompt by turn", Axis{"turn in the conversation", x},
                 Axis{"prompt tokens from the prefix cache (%)"});
  by_share.add({"cached share", std::move(share), Mark::kLineDots, "#2ca02c"})
      .note("Each turn sends the conversation so far: a working prefix cache serves a growing share of it.");
  if (v.cliff) {
    by_ttft.vline("cache cliff", v.cliff->from_turn, "#d62728");
    by_share.vline("cache cliff", v.cliff->from_turn, "#d62728");
  }
  return by_ttft.svg() + by_share.svg();
}

std::string group_body(const RowTable& table, const GroupStats& g, const RowList& rs) {
  std::string o;
  const auto& top = g.ranking.front();
  o += top.score >= 1 ? fmt::format(R"(<p class="verdict-line">Likely bottleneck: <b>{}</b> (score {:.1f})</p>)",
                                    html_escape(top.name), top.score)
                      : present::paragraph("No candidate crosses its threshold.", "verdict-line");
  if (const auto also = findings_beside_the_verdict(g); !also.empty()) {
    std::vector<std::string> items;
    for (const auto& [what, section] : also) items.push_back(fmt::format("{} ({})", what, section));
    o += present::paragraph(fmt::format("Also, below: {}.", fmt::join(items, "; ")));
  }
  std::string streamed_notes;
  if (g.tool_call_first > 0) {
    streamed_notes +=
        fmt::format(", {} of them answered first with a tool call: {}", g.tool_call_first, kToolCallFirstMeaning);
  }
  if (g.no_output > 0) {
    streamed_notes += fmt::format(", {} of them ended without any output: {}", g.no_output, kNoOutputMeaning);
  }
  std::vector<std::pair<std::string, std::string>> facts{
      {"requests", fmt::format("{} ({} streamed{})", g.requests, g.streamed, streamed_notes)},
      {"window", fmt::format("{:.1f} s, {:.2f} req/s", g.window_s, g.requests_per_s)},
      {"output tokens/s", present::cell(g.output_tokens_per_s)},
      {"error rate", fmt::format("{:.2f}%", 100 * g.error_rate)},
      {"busy share", fmt::format("{:.0f}% of the window with a request in flight", 100 * g.busy_share)}};
  if (g.failure_rate != g.error_rate) {
    facts.emplace_back("failure rate", fmt::format("{:.2f}% (the error rate less {} clients that left once output "
                                                   "had begun)",
                                                   100 * g.failure_rate, g.disconnected_after_first_token));
  }
  if (g.cut_short > 0 && g.cut_short_tokens) {
    facts.emplace_back("cut short", fmt::format("{} stopped at the length limit before the max_tokens asked for "
                                                "({:.0f} tokens p50): the engine's context, most often",
                                                g.cut_short, g.cut_short_tokens->p50));
  }
  if (const auto& w = g.left_before_first_token_ms) {
    facts.emplace_back("given up before the first token",
                       fmt::format("{} (waited {:.1f} ms p50, {:.1f} ms max; not in TTFT, whose tail is at least that)",
                                   w->n, w->p50, w->max));
  }
  o += present::facts(facts);
  if (auto t = timing_summary(g); !t.empty()) {
    std::string plain;  // the summary marks its warning with Markdown's **
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 2, "**") == 0) {
        ++i;
        continue;
      }
      plain.push_back(t[i]);
    }
    o += present::paragraph(plain, "note");
  }
  o += percentile_table(g).html("percentiles");
  if (const auto note = tail_sample_note(g); !note.empty()) o += present::paragraph(note, "note");
  Table ranking({"rank", "candidate", "score", "evidence"});
  int rank = 0;
  for (const auto& c : g.ranking) {
    if (!shown_in_ranking(c)) continue;
    ranking.row({std::to_string(++rank), c.name, fmt::format("{:.2f}", c.score),
                 fmt::format("{}", fmt::join(c.evidence, "; "))});
  }
  if (!ranking.empty()) o += present::heading("Bottleneck ranking") + ranking.html("ranking");
  if (!g.apis.empty()) {
    Table apis({"API", "requests", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms", "e2e p99 ms"});
    for (const auto& a : g.apis) {
      apis.row({a.operation, std::to_string(a.requests), ms(a.ttft_ms, &Summary::p50), ms(a.ttft_ms, &Summary::p99),
                ms(a.tpot_ms, &Summary::p50), ms(a.tpot_ms, &Summary::p99), ms(a.e2e_ms, &Summary::p99)});
    }
    o += present::heading("By API") + apis.html("apis");
  }
  if (!g.prompt_bands.empty()) {
    Table bands(prompt_band_headers());
    for (auto& row : prompt_band_rows(g.prompt_bands)) bands.row(std::move(row));
    std::vector<std::string> sentences;
    for (const auto& b : g.prompt_bands) sentences.push_back(prompt_band_sentence(b));
    o += present::heading("By prompt length") +
         present::paragraph("The group mixes short and long prompts: each band apart (times in ms).") +
         bands.html("prompt-bands") +
         present::paragraph("Likely bottleneck by prompt length (each band ranked from its own requests):") +
         present::bullets(sentences);
  }
  if (const auto q = queue_at_times_sentence(g); !q.empty()) {
    o += present::heading("Queue at times") + present::paragraph(q + ".");
  }
  if (const auto d = slow_decode_at_times_sentence(g); !d.empty()) {
    o += present::heading("Decode slow at times") + present::paragraph(d + ".");
  }
  for (const auto& h : g.held_prompts) {
    o += present::heading("TTFT tail") + present::paragraph(held_prompts_sentence(h) + ".");
  }
  if (g.speculation && g.speculation->worth_saying()) {
    o += present::heading("Speculative decoding") +
         present::paragraph(fmt::format("{}: {}. {}", g.speculation->source, speculation_findings(*g.speculation),
                                        kSpeculationBaseline));
  }
  if (g.turns) {
    Table turns(turn_headers());
    for (auto& row : turn_rows(*g.turns)) turns.row(std::move(row));
    o += present::heading("By turn") + turns.html("turns");
    if (g.turns->cliff)
      o += present::paragraph("Cache cliff: " + cliff_sentence(*g.turns->cliff) + ".", "verdict-line");
    if (g.turns->collapse && g.turns->collapse->conversations > 0)
      o += present::paragraph("By conversation: " + collapse_sentence(*g.turns->collapse) + ".");
    if (g.turns->failure_cliff)
      o +=
          present::paragraph("Failure cliff: " + failure_cliff_sentence(*g.turns->failure_cliff) + ".", "verdict-line");
    if (!g.turns->bands.empty()) {
      std::vector<std::string> bands;
      for (const auto& b : g.turns->bands) bands.push_back(band_sentence(b));
      o += present::paragraph("Likely bottleneck by band of turns (each ranked from its own requests):") +
           present::bullets(bands);
    }
    o += turn_charts(*g.turns);
  }
  if (auto parts = ttft_parts(rs); !parts.empty()) o += present::heading("TTFT in parts") + parts;
  if (auto levels = load_level_view(table, rs); !levels.empty()) o += present::heading("By load level") + levels;
  o += present::heading("Charts") + charts_for(g, rs);
  return o;
}

}  // namespace

std::string render_html(const ReportInput& in) {
  const auto by_group = rows_by_group(in.table, in.options);
  std::int64_t first = 0, last = 0;
  for (const auto& g : in.groups) {
    if (first == 0 || g.window_start_us < first) first = g.window_start_us;
    last = std::max(last, g.window_end_us);
  }
  present::Header h;
  h.title = "modelperfobs report";
  h.measured = fmt::format(
      "{} requests observed in {}, grouped by {}: where the time of each went, and what most "
      "likely limits it.",
      in.table.size(), fmt::format("{}", fmt::join(in.sources, ", ")), group_by_name(in.options.by));
  if (first > 0)
    h.facts.emplace_back("window", fmt::format("{} to {}", format_rfc3339_us(first), format_rfc3339_us(last)));
  h.facts.emplace_back("groups", std::to_string(in.groups.size()));
  h.facts.emplace_back("lines read", fmt::format("{} ({} invalid, {} of another schema, {} gap lines)", in.read.lines,
                                                 in.read.invalid_lines, in.read.foreign_lines, in.read.gap_lines));
  if (!in.tool_version.empty()) h.facts.emplace_back("made by", "modelperfobs " + in.tool_version);
  for (const auto& s : in.slos) {
    if (s.violated) h.warnings.push_back(fmt::format("{}: {} over its SLO ({})", s.group, s.name, s.limit));
  }
  present::Page page(std::move(h));
  for (const auto& g : in.groups) {
    const auto rows = by_group.find(g.key);
    page.section(fmt::format("{}: {}", group_by_name(in.options.by), g.key),
                 group_body(in.table, g, rows == by_group.end() ? RowList{} : rows->second));
  }
  if (!in.others.empty()) {
    Table t({"operation", "requests", "error rate", "e2e p50 ms", "e2e p99 ms", "prompt tokens"});
    for (const auto& x : in.others) {
      t.row({x.operation, std::to_string(x.requests), fmt::format("{:.3f}", x.error_rate), ms(x.e2e_ms, &Summary::p50),
             ms(x.e2e_ms, &Summary::p99), std::to_string(x.prompt_tokens_total)});
    }
    page.section("Other requests",
                 present::paragraph("They generate nothing (no TTFT, no decode) and are not ranked.", "note") +
                     t.html("others"));
  }
  if (!in.comparison_html.empty()) page.section("Against the baseline", in.comparison_html);
  if (!in.engine_trace_html.empty()) page.section("Engine spans joined to requests", in.engine_trace_html);
  return page.html();
}

}  // namespace mpo::report
