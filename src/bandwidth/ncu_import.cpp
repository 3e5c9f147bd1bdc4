// The implementation of bandwidth/ncu_import.hpp. The Nsight Compute CSV importer: both layouts ncu
// writes (the long "details" page, one row per launch per metric, and the wide `--page raw` table,
// one column per metric under a units row), grouped by (process, launch), failing closed with a
// message that names the launch and metric.
#include "bandwidth/ncu_import.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>

#include "bandwidth/csv.hpp"

namespace mpo::bandwidth {
namespace {

constexpr std::string_view kCapture =
    "capture with: ncu --csv --page raw --print-units base --print-metric-name name --metrics "
    "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum";

std::string strip_commas(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ',') out += c;
  }
  return out;
}

bool is_unavailable(std::string_view raw) {
  const std::string v = normalize_column(raw);
  return v.empty() || v == "n/a" || v == "not supported" || v == "[not supported]";
}

bool base_unit_ok(std::string_view metric, std::string_view unit_raw) {
  const std::string u = normalize_column(unit_raw);
  if (metric == kDurationMetric) return u == "ns" || u == "nsecond" || u == "nanosecond" || u == "nanoseconds";
  return u == "byte" || u == "bytes";
}

// One value of one metric of one launch, whichever layout it came from.
struct Observation {
  std::string id, pid, pname, host, device, kernel, metric, unit, value;
  std::uint32_t line = 0;
};

struct Columns {
  int id = -1, pid = -1, pname = -1, host = -1, device = -1, kernel = -1;
  int metric_name = -1, metric_unit = -1, metric_value = -1;
  int read = -1, write = -1, duration = -1;  // --page raw: metric columns
};

const std::string& at(const CsvRecord& r, int i) {
  static const std::string kEmpty;
  return i >= 0 && static_cast<std::size_t>(i) < r.fields.size() ? r.fields[static_cast<std::size_t>(i)] : kEmpty;
}

// The header names Nsight Compute writes (lower-cased) and the column each names.
constexpr std::pair<std::string_view, int Columns::*> kHeaderNames[] = {{"id", &Columns::id},
                                                                        {"process id", &Columns::pid},
                                                                        {"process name", &Columns::pname},
                                                                        {"host name", &Columns::host},
                                                                        {"device", &Columns::device},
                                                                        {"device name", &Columns::device},
                                                                        {"device id", &Columns::device},
                                                                        {"kernel name", &Columns::kernel},
                                                                        {"metric name", &Columns::metric_name},
                                                                        {"metric unit", &Columns::metric_unit},
                                                                        {"metric value", &Columns::metric_value},
                                                                        {kReadMetric, &Columns::read},
                                                                        {kWriteMetric, &Columns::write},
                                                                        {kDurationMetric, &Columns::duration}};

// A header row: ID, Process ID and Process Name, and either the details triple or metric columns.
// A name given twice names its last column, but the device is the first of its three names.
std::optional<Columns> header_columns(const CsvRecord& r) {
  Columns c;
  for (std::size_t i = 0; i < r.fields.size(); ++i) {
    const std::string n = normalize_column(r.fields[i]);
    for (const auto& [name, column] : kHeaderNames) {
      if (n != name) continue;
      if (column != &Columns::device || c.device < 0) c.*column = static_cast<int>(i);
      break;
    }
  }
  if (c.id < 0 || c.pid < 0 || c.pname < 0) return std::nullopt;
  return c;
}

bool is_details(const Columns& c) { return c.metric_name >= 0 && c.metric_unit >= 0 && c.metric_value >= 0; }

bool skippable(const CsvRecord& r) {
  if (r.fields.size() == 1) {
    const std::string& f = r.fields[0];
    return f.find_first_not_of(" \t") == std::string::npos || f.rfind("==", 0) == 0;
  }
  return false;
}

struct Launch {
  std::string id;
  std::string kernel;
  std::map<std::string, Observation, std::less<>> metrics;
};

}  // namespace

std::string_view to_string(NcuLayout l) { return l == NcuLayout::kRaw ? "raw" : "details"; }

std::optional<std::uint64_t> parse_byte_count(std::string_view text) {
  const std::string s = strip_commas(text);
  // digits [. digits] [e|E [+] digits], evaluated exactly.
  std::size_t i = 0;
  std::string digits;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') digits += s[i++];
  if (digits.empty()) return std::nullopt;
  std::string fraction;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') fraction += s[i++];
  }
  long exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && s[i] == '+') ++i;
    const auto [end, ec] = std::from_chars(s.data() + i, s.data() + s.size(), exponent);
    if (ec != std::errc{} || exponent < 0 || exponent > 40) return std::nullopt;
    i = static_cast<std::size_t>(end - s.data());
  }
  if (i != s.size()) return std::nullopt;
  // Move fraction digits into the integer part as the exponent allows; the rest must be zeros.
  const std::size_t shift = std::min<std::size_t>(fraction.size(), static_cast<std::size_t>(exponent));
  digits += fraction.substr(0, shift);
  if (fraction.find_first_not_of('0', shift) != std::string::npos) return std::nullopt;
  digits.append(static_cast<std::size_t>(exponent) - shift, '0');
  std::uint64_t v = 0;
  for (char c : digits) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

namespace {

// Where the records start: the header row (lines before it need not be CSV), scanned line by line.
struct Header {
  Columns cols;
  std::size_t pos = 0;  // the byte after the header row
  std::uint32_t line = 0;
};

Result<Header> find_header(std::string_view text) {
  std::size_t pos = 0;
  std::uint32_t line = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view one = text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos + 1);
    std::size_t p = 0;
    std::uint32_t l = line;
    auto rec = read_csv_record(one, p, l);
    ++line;
    pos += one.size();
    if (rec) {
      if (auto cols = header_columns(*rec)) return Header{*cols, pos, line};
    }
  }
  return make_error(errc::kNcuHeader,
                    fmt::format("Nsight Compute CSV header not found: no row names the columns \"ID\", "
                                "\"Process ID\" and \"Process Name\"; {}",
                                kCapture));
}

// The records after the header, one observation per (launch, metric) of the three we read: the
// details layout has a row per metric, the raw layout a column per metric and a row of units.
Result<std::vector<Observation>> read_observations(std::string_view text, Header h, NcuLayout layout) {
  const Columns& cols = h.cols;
  std::vector<Observation> obs;
  std::vector<std::string> raw_units(3);
  bool units_read = layout == NcuLayout::kDetails;
  while (h.pos < text.size()) {
    auto rec = read_csv_record(text, h.pos, h.line);
    if (!rec) return rec.error();
    if (skippable(*rec)) continue;
    if (header_columns(*rec)) {
      return make_error(errc::kNcuHeader,
                        fmt::format("line {}: a second header block; one capture per file (ncu appends "
                                    "when --log-file names an existing file)",
                                    rec->line));
    }
    if (!units_read) {
      // --page raw: the row after the header gives each metric column's unit; identity cells are empty.
      if (!at(*rec, cols.id).empty()) {
        return make_error(
            errc::kNcuUnit,
            fmt::format("line {}: the --page raw table has no units row after its header; {}", rec->line, kCapture));
      }
      raw_units = {at(*rec, cols.read), at(*rec, cols.write), at(*rec, cols.duration)};
      units_read = true;
      continue;
    }
    Observation base;
    base.id = at(*rec, cols.id);
    base.pid = at(*rec, cols.pid);
    base.pname = at(*rec, cols.pname);
    base.host = at(*rec, cols.host);
    base.device = at(*rec, cols.device);
    base.kernel = at(*rec, cols.kernel);
    base.line = rec->line;
    if (layout == NcuLayout::kDetails) {
      if (static_cast<int>(rec->fields.size()) <= cols.metric_value) {
        return make_error(errc::kNcuCsv,
                          fmt::format("line {}: a row with {} fields, fewer than the header's Metric Value column",
                                      rec->line, rec->fields.size()));
      }
      const std::string& metric = at(*rec, cols.metric_name);
      if (metric != kReadMetric && metric != kWriteMetric && metric != kDurationMetric) continue;
      Observation o = base;
      o.metric = metric;
      o.unit = at(*rec, cols.metric_unit);
      o.value = at(*rec, cols.metric_value);
      obs.push_back(std::move(o));
    } else {
      const std::pair<int, std::string_view> metric_cols[] = {
          {cols.read, kReadMetric}, {cols.write, kWriteMetric}, {cols.duration, kDurationMetric}};
      for (std::size_t k = 0; k < 3; ++k) {
        if (metric_cols[k].first < 0) continue;
        Observation o = base;
        o.metric = std::string(metric_cols[k].second);
        o.unit = raw_units[k];
        o.value = at(*rec, metric_cols[k].first);
        obs.push_back(std::move(o));
      }
    }
  }
  return obs;
}

// One process, one host, one device: every observation is checked against the first, then grouped
// by (process, launch), each metric once per launch.
Result<std::vector<Launch>> group_launches(const std::vector<Observation>& obs, const Columns& cols, bool host_column) {
  std::vector<Launch> launches;
  std::map<std::string, std::size_t, std::less<>> index;
  const Observation& first = obs.front();
  for (const Observation& o : obs) {
    if (o.id.empty() || o.pid.empty() || o.pname.empty()) {
      return make_error(errc::kNcuCsv,
                        fmt::format("line {}: metric {} has an incomplete launch identity (ID, Process ID and "
                                    "Process Name must be set)",
                                    o.line, o.metric));
    }
    if (o.pid != first.pid || o.pname != first.pname) {
      return make_error(errc::kNcuMixed,
                        fmt::format("mixed-process capture: {}/{} and {}/{} (line {}); profile one process "
                                    "per file",
                                    first.pid, first.pname, o.pid, o.pname, o.line));
    }
    if (host_column && o.host != first.host) {
      return make_error(errc::kNcuMixed,
                        fmt::format("mixed-host capture: launch {} (line {}) names another host than launch "
                                    "{}; profile one host per file",
                                    o.id, o.line, first.id));
    }
    if (cols.device >= 0) {
      if (o.device.empty()) {
        return make_error(errc::kNcuMixed, fmt::format("line {}: launch {} has an empty Device field", o.line, o.id));
      }
      if (o.device != first.device) {
        return make_error(errc::kNcuMixed, fmt::format("mixed-device capture: \"{}\" and \"{}\" (launch {}, line {}); "
                                                       "profile one device with --devices N",
                                                       first.device, o.device, o.id, o.line));
      }
    }
    const std::string key = o.pid + "/" + o.id;
    auto [it, fresh] = index.try_emplace(key, launches.size());
    if (fresh) launches.push_back(Launch{o.id, o.kernel, {}});
    Launch& l = launches[it->second];
    if (auto dup = l.metrics.find(o.metric); dup != l.metrics.end()) {
      return make_error(errc::kNcuMetric, fmt::format("launch {} has duplicate metric {} (lines {} and {})", o.id,
                                                      o.metric, dup->second.line, o.line));
    }
    l.metrics.emplace(o.metric, o);
  }
  return launches;
}

// The totals so far, per direction: a direction with any unavailable value is unavailable as a
// whole (no partial sums).
struct Sums {
  bool read_ok = true, write_ok = true, dur_ok = true;
  std::uint64_t read = 0, write = 0;
  double duration_ns = 0;
};

// One launch's value of one metric, added to its kernel's and to the capture's totals.
Status add_value(const Launch& l, std::string_view metric, KernelTotals& kt, Sums& sums, NcuImport& out) {
  auto it = l.metrics.find(metric);
  if (it == l.metrics.end()) {
    return make_error(errc::kNcuMetric, fmt::format("launch {} is missing {}; {}", l.id, metric, kCapture));
  }
  const Observation& o = it->second;
  if (is_unavailable(o.value)) {
    out.unavailable.push_back(fmt::format("{} of launch {} is \"{}\" (line {})", metric, l.id, o.value, o.line));
    if (metric == kReadMetric)
      sums.read_ok = false, kt.read_bytes.reset();
    else if (metric == kWriteMetric)
      sums.write_ok = false, kt.write_bytes.reset();
    else
      sums.dur_ok = false, kt.duration_ns.reset();
    return Ok{};
  }
  if (!base_unit_ok(metric, o.unit)) {
    return make_error(errc::kNcuUnit,
                      fmt::format("{} of launch {} must use a base unit ({}), got \"{}\" (line {}); pass "
                                  "--print-units base to ncu",
                                  metric, l.id, metric == kDurationMetric ? "nsecond" : "byte", o.unit, o.line));
  }
  if (metric == kDurationMetric) {
    const std::string v = strip_commas(o.value);
    double d = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
    if (ec != std::errc{} || end != v.data() + v.size() || !std::isfinite(d) || d < 0) {
      return make_error(errc::kNcuValue, fmt::format("{} of launch {} is \"{}\", not a finite non-negative number of "
                                                     "nanoseconds (line {})",
                                                     metric, l.id, o.value, o.line));
    }
    sums.duration_ns += d;
    if (kt.duration_ns) *kt.duration_ns += d;
    return Ok{};
  }
  const auto bytes = parse_byte_count(o.value);
  if (!bytes) {
    return make_error(errc::kNcuValue, fmt::format("{} of launch {} is \"{}\", not a non-negative integer byte count "
                                                   "(line {})",
                                                   metric, l.id, o.value, o.line));
  }
  std::uint64_t& sum = metric == kReadMetric ? sums.read : sums.write;
  std::optional<std::uint64_t>& ksum = metric == kReadMetric ? kt.read_bytes : kt.write_bytes;
  if (*bytes > UINT64_MAX - sum) {
    return make_error(errc::kNcuValue, fmt::format("the sum of {} overflows 64 bits at launch {}", metric, l.id));
  }
  sum += *bytes;
  if (ksum) *ksum += *bytes;
  return Ok{};
}

// Values per launch, into per-kernel totals and the capture's sums.
Status sum_launches(const std::vector<Launch>& launches, NcuImport& out) {
  Sums sums;
  std::map<std::string, std::size_t> kernel_index;
  for (const Launch& l : launches) {
    auto [it, fresh] = kernel_index.try_emplace(l.kernel, out.kernels.size());
    if (fresh) out.kernels.push_back(KernelTotals{l.kernel, 0, std::uint64_t{0}, std::uint64_t{0}, 0.0});
    KernelTotals& kt = out.kernels[it->second];
    ++kt.launches;
    for (std::string_view metric : {kReadMetric, kWriteMetric, kDurationMetric}) {
      if (auto st = add_value(l, metric, kt, sums, out); !st) return st;
    }
  }
  if (sums.read_ok) out.read_bytes = sums.read;
  if (sums.write_ok) out.write_bytes = sums.write;
  if (sums.dur_ok) out.duration_ns = sums.duration_ns;
  return Ok{};
}

}  // namespace

Result<NcuImport> import_ncu_csv(std::string_view text) {
  auto header = find_header(text);
  if (!header) return header.error();
  const Columns& cols = header->cols;
  NcuImport out;
  out.layout = is_details(cols) ? NcuLayout::kDetails : NcuLayout::kRaw;
  out.host_column = cols.host >= 0;
  if (out.layout == NcuLayout::kRaw && cols.read < 0 && cols.write < 0 && cols.duration < 0) {
    return make_error(errc::kNcuMetric, fmt::format("the --page raw table has none of the columns {}, {}, {}; {}",
                                                    kReadMetric, kWriteMetric, kDurationMetric, kCapture));
  }
  auto obs = read_observations(text, *header, out.layout);
  if (!obs) return obs.error();
  if (obs->empty()) {
    return make_error(errc::kNcuMetric,
                      fmt::format("the CSV has none of the required metrics {}, {}, {} ({} layout); {}", kReadMetric,
                                  kWriteMetric, kDurationMetric, to_string(out.layout), kCapture));
  }
  auto launches = group_launches(*obs, cols, out.host_column);
  if (!launches) return launches.error();
  const Observation& first = obs->front();
  out.process_id = first.pid;
  out.process_name = first.pname;
  if (cols.device >= 0) out.profiler_device = first.device;
  out.launch_count = launches->size();
  if (auto st = sum_launches(*launches, out); !st) return st.error();
  if (out.duration_ns && *out.duration_ns == 0 &&
      ((out.read_bytes && *out.read_bytes > 0) || (out.write_bytes && *out.write_bytes > 0))) {
    return make_error(errc::kNcuDuration,
                      fmt::format("the cumulative profiled kernel duration of {} launch(es) is zero while "
                                  "bytes were counted; the capture cannot give a bandwidth",
                                  out.launch_count));
  }
  return out;
}

}  // namespace mpo::bandwidth
