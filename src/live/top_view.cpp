// The implementation of live/top_view.hpp. `modelperfobs top`: what a running proxy sees, over the
// last N seconds, as a terminal screen or as plain lines.
#include "live/top_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/time.hpp"

namespace mpo::live {
namespace {

// Columns of a UTF-8 text (every character one column: the screen holds no wide ones).
std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// `s` cut to `width` columns (an ellipsis marks the cut), or padded with spaces to it when `pad`.
std::string fit(std::string_view s, std::size_t width, bool pad = false) {
  std::string out;
  if (columns(s) <= width) {
    out = std::string(s);
  } else if (width > 0) {
    std::size_t cols = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if ((c & 0xC0) != 0x80) {
        if (cols + 1 == width) break;
        ++cols;
      }
      out += s[i];
    }
    out += "\u2026";
  }
  if (pad) out.append(width - std::min(width, columns(out)), ' ');
  return out;
}

std::string number(std::optional<double> v, int width, int decimals = 0) {
  if (!v || !std::isfinite(*v)) return fmt::format("{:>{}}", "-", width);
  return fmt::format("{:>{}.{}f}", *v, width, decimals);
}

std::optional<double> p50(const std::optional<Summary>& s) { return s ? std::optional(s->p50) : std::nullopt; }
std::optional<double> p99(const std::optional<Summary>& s) { return s ? std::optional(s->p99) : std::nullopt; }

double errors_of(const report::GroupStats& g) { return g.error_rate; }

std::string model_name(const report::GroupStats& g) { return g.key.empty() ? "(no model)" : g.key; }

// The likely bottleneck, as the report's ranking says it: the first candidate whose evidence
// crosses its threshold, with its first line of evidence.
std::string bottleneck_line(const report::GroupStats& g) {
  if (g.ranking.empty()) return "not enough requests in the window to judge";
  const auto& top = g.ranking.front();
  if (top.score < 1) return "nothing crosses its threshold (highest: " + top.name + ")";
  return fmt::format("{} ({:.2f}): {}", top.name, top.score, top.evidence.empty() ? "" : top.evidence.front());
}

// The proxy's read lag, and when reads were late, whether they came in stalls apart (the report's
// note) or in stretches (its bottleneck warning): report/proxy_stalls.hpp.
std::string proxy_lag_line(const report::GroupStats& g) {
  std::string out = fmt::format("proxy lag p99 {:.2f} ms", g.proxy_lag_ms->p99);
  if (const auto& ps = g.proxy_stalls; ps && g.proxy_lag_ms->p99 >= report::kProxyLagWarnMs) {
    // Held-up stalls: the loop read nothing at all while the bytes waited (not behind its traffic).
    const std::string held = ps->held_up_stalls == 0 ? std::string()
                             : ps->held_up_stalls == ps->stalls.size()
                                 ? std::string(", held up")
                                 : fmt::format(", {} held up", ps->held_up_stalls);
    out += ps->isolated()
               ? fmt::format(" ({} stall{}{}, up to {:.1f} ms)", ps->stalls.size(), ps->stalls.size() == 1 ? "" : "s",
                             ps->held_up_stalls == 0 ? " apart" : held, g.proxy_lag_ms->max)
               : fmt::format(" (behind: {} of {} lines late, {} stalls{}{}; {})", ps->late_lines, ps->timed_lines,
                             ps->stalls.size(), ps->stretch ? " in stretches" : "", held,
                             ps->mostly_held_up() ? "give it a CPU of its own" : "give it more CPU");
  }
  return out;
}

std::string engine_line(const EngineWindow& e) {
  std::string out = "engine";
  if (e.evidence && !e.evidence->engine.empty()) out += " (" + e.evidence->engine + ")";
  out += ":";
  if (e.waiting_now) out += fmt::format(" waiting {:.0f}", *e.waiting_now);
  if (e.evidence && e.evidence->waiting) out += fmt::format(" (max {:.0f})", e.evidence->waiting->max);
  if (e.running_now) out += fmt::format(", running {:.0f}", *e.running_now);
  if (e.kv_usage_now) out += fmt::format(", KV {:.0f}%", 100 * *e.kv_usage_now);
  if (e.evidence && e.evidence->preemptions) out += fmt::format(", preempted {:.0f}", *e.evidence->preemptions);
  if (e.evidence && e.evidence->queue_time) {
    out += fmt::format(", queued {:.1f} ms avg", e.evidence->queue_time->mean_ms);
  }
  if (!e.waiting_now && !e.running_now && !e.kv_usage_now) out += " no gauges in its scrapes";
  return out;
}

void push(std::deque<double>& d, double v) {
  d.push_back(v);
  while (d.size() > History::kLength) d.pop_front();
}

}  // namespace

std::string_view to_string(SortBy s) {
  switch (s) {
    case SortBy::kRequests: return "req/s";
    case SortBy::kTtftP99: return "TTFT p99";
    case SortBy::kErrors: return "errors";
    case SortBy::kName: return "model";
  }
  return "req/s";
}

SortBy next(SortBy s) {
  switch (s) {
    case SortBy::kRequests: return SortBy::kTtftP99;
    case SortBy::kTtftP99: return SortBy::kErrors;
    case SortBy::kErrors: return SortBy::kName;
    case SortBy::kName: return SortBy::kRequests;
  }
  return SortBy::kRequests;
}

void History::add(const TopFrame& f) {
  for (const auto& g : f.groups) {
    push(requests_per_s[g.key], g.requests_per_s);
    push(ttft_p50_ms[g.key], g.ttft_ms ? g.ttft_ms->p50 : 0);
    push(output_tokens_per_s[g.key], g.output_tokens_per_s.value_or(0));
  }
}

std::string sparkline(const std::deque<double>& values, std::size_t width) {
  static const char* kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  const std::size_t from = values.size() > width ? values.size() - width : 0;
  double top = 0;
  for (std::size_t i = from; i < values.size(); ++i) top = std::max(top, values[i]);
  std::string out;
  for (std::size_t i = from; i < values.size(); ++i) {
    const double share = top > 0 && std::isfinite(values[i]) ? std::max(0.0, values[i]) / top : 0;
    out += kBlocks[std::min<std::size_t>(7, static_cast<std::size_t>(share * 7.999))];
  }
  return out;
}

std::vector<const report::GroupStats*> sorted_groups(const TopFrame& f, SortBy by) {
  std::vector<const report::GroupStats*> out;
  for (const auto& g : f.groups) out.push_back(&g);
  std::stable_sort(out.begin(), out.end(), [by](const report::GroupStats* a, const report::GroupStats* b) {
    switch (by) {
      case SortBy::kRequests: return a->requests_per_s > b->requests_per_s;
      case SortBy::kTtftP99: return p99(a->ttft_ms).value_or(0) > p99(b->ttft_ms).value_or(0);
      case SortBy::kErrors: return errors_of(*a) > errors_of(*b);
      case SortBy::kName: return a->key < b->key;
    }
    return false;
  });
  return out;
}

const report::GroupStats* focused_group(const TopFrame& f, const TopOptions& o) {
  for (const auto& g : f.groups) {
    if (!o.focus.empty() && g.key == o.focus) return &g;
  }
  const auto sorted = sorted_groups(f, SortBy::kRequests);
  return sorted.empty() ? nullptr : sorted.front();
}

std::vector<std::string> render_screen(const TopFrame& f, const TopOptions& o, const History& h, int width,
                                       int height) {
  const auto w = static_cast<std::size_t>(std::max(width, 40));
  std::vector<std::string> lines;
  lines.push_back(fit(fmt::format("modelperfobs top  {}  window {:.0f} s  {}{}", f.source, o.window_s,
                                  format_rfc3339_us(f.now_us).substr(11, 8), o.paused ? "  [paused]" : ""),
                      w));
  lines.push_back(fit(fmt::format("{:<15}{:>7}{:>5}{:>6}{:>7}{:>7}{:>7}{:>6}{:>7}{:>7}{:>6}", "MODEL", "req/s", "infl",
                                  "err%", "TTFT50", "p99ms", "TPOT50", "p99", "ITL95", "tok/s", "cache"),
                      w));
  const auto groups = sorted_groups(f, o.sort);
  const std::size_t body = static_cast<std::size_t>(std::max(height, 12)) - 10;  // room for what follows
  std::size_t shown = 0, rows = 0;
  for (; shown < groups.size() && rows < body; ++shown) {
    const auto& g = *groups[shown];
    const std::string mark = !o.focus.empty() && g.key == o.focus ? ">" : " ";
    const auto in_flight = f.in_flight.find(g.key);
    lines.push_back(
        fit(fmt::format("{}{}{}{}{}{}{}{}{}{}{}{}", mark, fit(model_name(g), 14, true), number(g.requests_per_s, 7, 1),
                        number(in_flight == f.in_flight.end() ? std::nullopt : std::optional(in_flight->second), 5),
                        number(100 * g.error_rate, 6, 1), number(p50(g.ttft_ms), 7), number(p99(g.ttft_ms), 7),
                        number(p50(g.tpot_ms), 7, 1), number(p99(g.tpot_ms), 6, 1), number(p50(g.itl_p95_ms), 7, 1),
                        number(g.output_tokens_per_s, 7),
                        g.cached_share ? number(100 * *g.cached_share, 5) + "%" : "     -"),
            w));
    ++rows;
    // A model spoken to through several APIs: a row for each, its share of the model's requests.
    if (g.apis.size() < 2) continue;
    for (const auto& api : g.apis) {
      if (rows >= body) break;
      const double rate =
          g.requests > 0 ? g.requests_per_s * static_cast<double>(api.requests) / static_cast<double>(g.requests) : 0;
      lines.push_back(
          fit(fmt::format(" {}{}{:>11}{}{}{}{}{}", fit("  " + api.operation, 14, true), number(rate, 7, 1), "",
                          number(p50(api.ttft_ms), 7), number(p99(api.ttft_ms), 7), number(p50(api.tpot_ms), 7, 1),
                          number(p99(api.tpot_ms), 6, 1), number(p50(api.itl_p95_ms), 7, 1)),
              w));
      ++rows;
    }
  }
  if (shown < groups.size()) lines.push_back(fmt::format(" ... {} more models (s: sort)", groups.size() - shown));
  if (!f.lines_problem.empty()) {
    lines.push_back(fit(" cannot read the lines: " + f.lines_problem, w));
  } else if (groups.empty()) {
    lines.push_back(" no requests finished in the window");
  }
  if (!f.gauge_problem.empty()) lines.push_back(fit(" no in-flight counts: " + f.gauge_problem, w));
  lines.emplace_back();
  if (const auto* g = focused_group(f, o)) {
    const std::string name = model_name(*g);
    const auto spark = [&](const std::map<std::string, std::deque<double>>& m) {
      const auto it = m.find(g->key);
      return it == m.end() ? std::string() : sparkline(it->second, 12);
    };
    lines.push_back(fit(fmt::format("{}: req/s {}  TTFT p50 {}  tok/s {}", name, spark(h.requests_per_s),
                                    spark(h.ttft_p50_ms), spark(h.output_tokens_per_s)),
                        w));
    std::string outcomes;
    for (const auto& [outcome, n] : g->outcomes) {
      if (outcome != "ok") outcomes += fmt::format("{}{} x{}", outcomes.empty() ? "" : ", ", outcome, n);
    }
    if (!outcomes.empty()) {
      const auto latest = f.latest_error.find(g->key);
      lines.push_back(fit(
          "errors: " + outcomes + (latest == f.latest_error.end() ? std::string() : "; latest: " + latest->second), w));
    }
    const std::string b = "likely bottleneck: " + bottleneck_line(*g);
    lines.push_back(fit(b, w));
    if (columns(b) > w) lines.push_back(fit("  " + b.substr(b.size() - std::min(b.size(), w - 2)), w));
    if (g->proxy_lag_ms) lines.push_back(fit(proxy_lag_line(*g), w));
  }
  if (f.engine) lines.push_back(fit(engine_line(*f.engine), w));
  const auto total_height = static_cast<std::size_t>(std::max(height, 12));
  while (lines.size() + 1 < total_height) lines.emplace_back();
  lines.resize(total_height - 1);
  lines.push_back(fit(fmt::format("q quit  p pause  s sort ({})  m model  +/- window  lines {} ({} unreadable)",
                                  to_string(o.sort), f.lines, f.unreadable_lines),
                      w));
  return lines;
}

std::vector<std::string> render_lines(const TopFrame& f, const TopOptions& o) {
  std::vector<std::string> out;
  const std::string when = format_rfc3339_us(f.now_us);
  for (const auto* g : sorted_groups(f, o.sort)) {
    std::string line = fmt::format(
        "{} model={} window_s={:.0f} requests={} req_s={:.2f} err_pct={:.1f} ttft_p50_ms={} ttft_p99_ms={} "
        "tpot_p50_ms={} out_tok_s={}",
        when, model_name(*g), o.window_s, g->requests, g->requests_per_s, 100 * g->error_rate,
        number(p50(g->ttft_ms), 0), number(p99(g->ttft_ms), 0), number(p50(g->tpot_ms), 0, 1),
        number(g->output_tokens_per_s, 0));
    if (const auto n = f.in_flight.find(g->key); n != f.in_flight.end())
      line += fmt::format(" in_flight={:.0f}", n->second);
    // Streamed requests whose clients gave up before a first token: the TTFT figures leave them out.
    if (const auto& w = g->left_before_first_token_ms)
      line += fmt::format(" given_up_before_first_token={} given_up_waited_p50_ms={:.0f}", w->n, w->p50);
    // Streams that date no first token (a tool call first, or no output at all): the TTFT and TPOT
    // figures leave them out (REPORT.md "Tool calls first", "Streams that ended without output").
    if (g->tool_call_first > 0) line += fmt::format(" tool_call_first={}", g->tool_call_first);
    if (g->no_output > 0) line += fmt::format(" no_output={}", g->no_output);
    // Clients that left once output had begun (a stop button): in err_pct, not failures.
    if (g->disconnected_after_first_token > 0) {
      line += fmt::format(" left_after_output={} fail_pct={:.1f}", g->disconnected_after_first_token,
                          100 * g->failure_rate);
    }
    if (!g->ranking.empty() && g->ranking.front().score >= 1) {
      line += fmt::format(" bottleneck={} score={:.2f}", g->ranking.front().name, g->ranking.front().score);
    }
    out.push_back(std::move(line));
  }
  if (!f.lines_problem.empty()) {
    out.insert(out.begin(), when + " cannot read the lines: " + f.lines_problem);
  } else if (out.empty()) {
    out.push_back(when + " no requests finished in the last " + fmt::format("{:.0f}", o.window_s) + " s");
  }
  if (!f.gauge_problem.empty()) out.push_back(when + " no in-flight counts: " + f.gauge_problem);
  if (f.engine) out.push_back(when + " " + engine_line(*f.engine));
  return out;
}

}  // namespace mpo::live
