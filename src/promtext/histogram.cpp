// The implementation of promtext/histogram.hpp. Histograms assembled from their samples (_bucket /
// _sum / _count / _created) and validated, and PromQL's histogram_quantile over cumulative buckets.
#include "promtext/histogram.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "promtext/number.hpp"

namespace mpo::promtext {
namespace {

Labels without_le(const Labels& labels) {
  Labels out;
  for (const Label& l : labels) {
    if (l.name != "le") out.push_back(l);
  }
  std::sort(out.begin(), out.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  return out;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && std::string_view(s).substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

namespace {

// Where a sample stood in the page, for a problem's position.
struct Where {
  std::uint32_t line, column;
};

void add_problem(const MetricFamily& f, HistogramSeries& h, Where w, std::string message) {
  h.problems.push_back(Problem{w.line, w.column, f.name, std::move(message)});
}

// One series' buckets sorted by bound, then checked: cumulative, ending at +Inf, +Inf equal to _count.
void sort_and_check_buckets(const MetricFamily& f, HistogramSeries& h, const std::vector<Where>& bucket_where) {
  std::vector<std::size_t> order(h.buckets.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return h.buckets[a].upper < h.buckets[b].upper; });
  std::vector<Bucket> sorted;
  std::vector<Where> where;
  for (std::size_t i : order) {
    sorted.push_back(h.buckets[i]);
    where.push_back(bucket_where[i]);
  }
  h.buckets = std::move(sorted);
  for (std::size_t i = 1; i < h.buckets.size(); ++i) {
    if (h.buckets[i].cumulative < h.buckets[i - 1].cumulative) {
      add_problem(f, h, where[i],
                  fmt::format("bucket le=\"{}\" holds {} but le=\"{}\" already holds {}: buckets must be cumulative",
                              format_number(h.buckets[i].upper), format_number(h.buckets[i].cumulative),
                              format_number(h.buckets[i - 1].upper), format_number(h.buckets[i - 1].cumulative)));
    }
  }
  if (h.buckets.empty()) return;
  const Bucket& last = h.buckets.back();
  if (!std::isinf(last.upper)) {
    add_problem(f, h, where.back(), "the histogram has no le=\"+Inf\" bucket");
  } else if (h.count && *h.count != last.cumulative) {
    add_problem(f, h, where.back(),
                fmt::format("the +Inf bucket holds {} but _count is {}", format_number(last.cumulative),
                            format_number(*h.count)));
  }
}

}  // namespace

std::vector<HistogramSeries> assemble_histograms(const MetricFamily& f) {
  std::vector<HistogramSeries> out;
  std::vector<std::vector<Where>> bucket_where;
  auto problem = [&](HistogramSeries& h, Where w, std::string message) { add_problem(f, h, w, std::move(message)); };
  const bool gauge = f.type == MetricType::kGaugeHistogram;
  std::unordered_map<std::string, std::size_t> index;  // label set (without le) -> series
  std::string key_text;
  for (const Sample& s : f.samples) {
    Labels key = without_le(s.labels);
    key_text.clear();
    for (const Label& l : key) {
      key_text += l.name;
      key_text += '\0';
      key_text += l.value;
      key_text += '\0';
    }
    auto [slot, fresh] = index.try_emplace(key_text, out.size());
    if (fresh) {
      out.push_back(HistogramSeries{std::move(key), {}, {}, {}, {}, s.line, {}});
      bucket_where.emplace_back();
    }
    const auto it = out.begin() + static_cast<std::ptrdiff_t>(slot->second);
    HistogramSeries& h = *it;
    const Where w{s.line, s.value_column};
    if (ends_with(s.name, "_bucket")) {
      const std::string* le = find_label(s.labels, "le");
      const auto upper = le ? parse_number(*le) : std::nullopt;
      if (!upper || std::isnan(*upper)) {
        problem(h, {s.line, 1},
                le ? fmt::format("bucket bound le=\"{}\" is not a number", *le)
                   : std::string("a _bucket sample has no le label"));
        continue;
      }
      if (std::any_of(h.buckets.begin(), h.buckets.end(), [&](const Bucket& b) { return b.upper == *upper; })) {
        problem(h, {s.line, 1}, fmt::format("bucket le=\"{}\" appears twice", *le));
        continue;
      }
      h.buckets.push_back(Bucket{*upper, s.value});
      bucket_where[static_cast<std::size_t>(it - out.begin())].push_back(w);
    } else if (ends_with(s.name, gauge ? "_gsum" : "_sum")) {
      h.sum = s.value;
    } else if (ends_with(s.name, gauge ? "_gcount" : "_count")) {
      h.count = s.value;
    } else if (ends_with(s.name, "_created")) {
      h.created = s.value;
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) sort_and_check_buckets(f, out[k], bucket_where[k]);
  return out;
}

namespace {

// PromQL's preparation: sorted, equal bounds coalesced, counts forced monotonic. Empty when
// histogram_quantile answers NaN for want of buckets, a +Inf bucket or observations.
std::vector<Bucket> prepared(std::span<const Bucket> in) {
  std::vector<Bucket> b(in.begin(), in.end());
  std::sort(b.begin(), b.end(), [](const Bucket& x, const Bucket& y) { return x.upper < y.upper; });
  if (b.empty() || !std::isinf(b.back().upper) || b.back().upper < 0) return {};
  std::vector<Bucket> c;
  for (const Bucket& x : b) {
    if (!c.empty() && c.back().upper == x.upper)
      c.back().cumulative += x.cumulative;
    else
      c.push_back(x);
  }
  for (std::size_t i = 1; i < c.size(); ++i) c[i].cumulative = std::max(c[i].cumulative, c[i - 1].cumulative);
  if (c.size() < 2 || c.back().cumulative == 0) return {};
  return c;
}

// The index of the bucket holding rank q * observations (sort.Search over all but +Inf).
std::size_t rank_bucket(const std::vector<Bucket>& c, double rank) {
  std::size_t k = 0;
  while (k < c.size() - 1 && c[k].cumulative < rank) ++k;
  return k;
}

}  // namespace

double histogram_quantile(double q, std::span<const Bucket> in) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(q)) return kNaN;
  if (q < 0) return -std::numeric_limits<double>::infinity();
  if (q > 1) return std::numeric_limits<double>::infinity();
  const std::vector<Bucket> c = prepared(in);
  if (c.empty()) return kNaN;
  double rank = q * c.back().cumulative;
  const std::size_t k = rank_bucket(c, rank);
  if (k == c.size() - 1) return c[c.size() - 2].upper;
  if (k == 0 && c[0].upper <= 0) return c[0].upper;
  double start = 0;
  const double end = c[k].upper;
  double count = c[k].cumulative;
  if (k > 0) {
    start = c[k - 1].upper;
    count -= c[k - 1].cumulative;
    rank -= c[k - 1].cumulative;
  }
  return start + (end - start) * (rank / count);
}

std::optional<std::pair<double, double>> quantile_bucket(double q, std::span<const Bucket> in) {
  if (std::isnan(q) || q < 0 || q > 1) return std::nullopt;
  const std::vector<Bucket> c = prepared(in);
  if (c.empty()) return std::nullopt;
  const std::size_t k = rank_bucket(c, q * c.back().cumulative);
  const double lower = k == 0 ? std::min(0.0, c[0].upper) : c[k - 1].upper;
  return std::pair{lower, c[k].upper};
}

std::optional<HistogramSeries> merge_histograms(std::span<const HistogramSeries> series) {
  if (series.empty()) return std::nullopt;
  HistogramSeries m = series[0];
  m.labels.clear();
  for (std::size_t i = 1; i < series.size(); ++i) {
    const HistogramSeries& s = series[i];
    if (s.buckets.size() != m.buckets.size()) return std::nullopt;
    for (std::size_t k = 0; k < s.buckets.size(); ++k) {
      if (s.buckets[k].upper != m.buckets[k].upper) return std::nullopt;
      m.buckets[k].cumulative += s.buckets[k].cumulative;
    }
    m.sum = m.sum && s.sum ? std::optional<double>(*m.sum + *s.sum) : std::nullopt;
    m.count = m.count && s.count ? std::optional<double>(*m.count + *s.count) : std::nullopt;
    m.created = std::nullopt;
    for (const Problem& p : s.problems) m.problems.push_back(p);
  }
  return m;
}

}  // namespace mpo::promtext
