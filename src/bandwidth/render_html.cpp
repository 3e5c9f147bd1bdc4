// The implementation of bandwidth/render_html.hpp. A bandwidth or host-roofline receipt as a page
// (pure, src/present): the figure with its validity and what it rests on; per-kernel rates for an
// Nsight Compute capture; the threads-against-GB/s curve with its trials, the sustainable figure
// and the knee for a host roofline.
#include "bandwidth/render_html.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include "core/envelope.hpp"
#include "core/json.hpp"
#include "present/chart.hpp"
#include "present/page.hpp"

namespace mpo::bandwidth {
namespace {

namespace json = boost::json;

std::string text_of(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_double()) return fmt::format("{:.6g}", v.as_double());
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  if (v.is_bool()) return v.as_bool() ? "yes" : "no";
  return json::serialize(v);
}

std::string gb(std::optional<double> v) { return v ? fmt::format("{:.1f} GB/s", *v) : "n/a"; }
std::string share(std::optional<double> v) { return v ? fmt::format("{:.1f}%", 100 * *v) : "n/a"; }

std::string hbm_body(const json::object& result, const json::object& inputs) {
  present::Table rates({"figure", "value"});
  rates.row({"read", gb(json_double(result, "read_gb_s"))});
  rates.row({"write", gb(json_double(result, "write_gb_s"))});
  rates.row({"total", gb(json_double(result, "total_gb_s"))});
  rates.row({"of the datasheet's bandwidth", share(json_double(result, "utilization_of_theoretical"))});
  rates.row({"of the device roofline", share(json_double(result, "utilization_of_device_roofline"))});
  rates.row({"launches", std::to_string(json_int(result, "launch_count").value_or(0))});
  rates.row({"process", std::string(json_string(result, "process").value_or("n/a"))});
  std::string o = rates.html("rates");
  const auto* kernels = json_array(result, "kernels");
  if (kernels && !kernels->empty()) {
    present::Table t({"kernel", "launches", "read MB", "write MB", "time ms", "GB/s"});
    present::Chart c("Kernels: bandwidth against time on the GPU", present::Axis{"kernel time (ms)"},
                     present::Axis{"GB/s"});
    std::vector<present::Point> pts;
    for (const auto& k : *kernels) {
      if (!k.is_object()) continue;
      const auto& ko = k.as_object();
      const double rb = json_double(ko, "read_bytes").value_or(0), wb = json_double(ko, "write_bytes").value_or(0);
      const double ns = json_double(ko, "duration_ns").value_or(0);
      const double rate = ns > 0 ? (rb + wb) / ns : 0;  // bytes per ns = GB/s
      t.row({std::string(json_string(ko, "name").value_or("?")), std::to_string(json_int(ko, "launches").value_or(0)),
             fmt::format("{:.1f}", rb / 1e6), fmt::format("{:.1f}", wb / 1e6), fmt::format("{:.3f}", ns / 1e6),
             fmt::format("{:.1f}", rate)});
      if (ns > 0) pts.push_back({ns / 1e6, rate});
    }
    c.add({"kernels", std::move(pts), present::Mark::kDots, "#1f77b4"});
    if (auto th = json_double(inputs, "theoretical_gb_s")) c.hline("datasheet bandwidth", *th, "#b00020");
    if (auto dr = json_double(inputs, "device_roofline_gb_s")) c.hline("device roofline", *dr, "#7a1fa2");
    o += present::heading("Kernels") + t.html("kernels") + c.svg();
  }
  return o;
}

std::string roofline_body(const json::object& result) {
  const auto* points = json_array(result, "points");
  present::Table t({"threads", "median GB/s", "trials GB/s", "first touch s"});
  std::vector<present::Point> medians, trials;
  std::vector<double> threads;
  if (points) {
    for (const auto& p : *points) {
      if (!p.is_object()) continue;
      const auto& po = p.as_object();
      const double n = json_double(po, "threads").value_or(0), m = json_double(po, "median_gb_s").value_or(0);
      std::string each;
      if (const auto* tr = json_array(po, "trial_gb_s")) {
        for (const auto& v : *tr) {
          if (!v.is_number()) continue;
          trials.push_back({n, v.to_number<double>()});
          each += fmt::format("{}{:.1f}", each.empty() ? "" : ", ", v.to_number<double>());
        }
      }
      medians.push_back({n, m});
      threads.push_back(n);
      t.row({fmt::format("{:.0f}", n), fmt::format("{:.1f}", m), each,
             fmt::format("{:.3f}", json_double(po, "first_touch_s").value_or(0))});
    }
  }
  present::Chart c("Host memory copy bandwidth against threads",
                   present::Axis{"threads", present::scale_for_counts(threads), true, true}, present::Axis{"GB/s"});
  c.add({"median", std::move(medians), present::Mark::kLineDots, "#1f77b4"});
  c.add({"trials", std::move(trials), present::Mark::kDots, "#9ecae1"});
  if (auto s = json_double(result, "sustainable_gb_s")) c.hline("sustainable", *s, "#2ca02c");
  if (auto k = json_double(result, "knee_threads")) c.vline("knee", *k, "#d62728");
  c.note(
      "Bytes counted: read + written. The sustainable figure is the largest bandwidth two adjacent thread counts "
      "both reach; the knee, the first thread count from which every point is within the threshold of it.");
  return t.html("points") + c.svg();
}

}  // namespace

Result<std::string> receipt_html(std::string_view receipt_json) {
  boost::system::error_code ec;
  auto doc = json::parse(receipt_json, ec);
  if (ec || !doc.is_object()) return make_error(errc::kBandwidthHtml, "the receipt is not a JSON object");
  const auto& o = doc.as_object();
  const auto schema = json_string(o, "schema").value_or("");
  const auto* result = json_object(o, "result");
  const auto* inputs = json_object(o, "inputs");
  if ((schema != "modelperfobs.bandwidth.v1" && schema != "modelperfobs.host-roofline.v1") || !result || !inputs) {
    return make_error(errc::kBandwidthHtml,
                      fmt::format("not a bandwidth or host-roofline receipt (schema '{}')", schema));
  }
  const std::string kind(json_string(*result, "kind").value_or(""));
  present::Header h;
  h.title = kind == "host-roofline"        ? "Host memory roofline"
            : kind == "host-memory-sample" ? "Host memory bandwidth sample"
                                           : "GPU memory bandwidth (Nsight Compute)";
  h.measured = kind == "host-roofline"
                   ? "How fast this machine copies memory with 1, 2, 4, ... threads: the ceiling a host-side "
                     "bandwidth figure is compared with."
               : kind == "host-memory-sample"
                   ? "Bytes a workload moved over its wall time, against this machine's measured copy roofline."
                   : "Bytes the profiled kernels moved over the time they ran, from the profiler's own counters.";
  if (json_object(o, "validity")) {
    auto validity = read_validity(o);
    present::Verdict verdict;
    verdict.valid = validity.valid;
    verdict.label = verdict.valid ? "valid for claims" : "not valid for claims";
    verdict.reasons = std::move(validity.reasons);
    h.verdict = std::move(verdict);
  }
  h.facts.emplace_back("made", std::string(json_string(o, "created_at").value_or("n/a")));
  for (const auto& [k, v] : *inputs) {
    if (!v.is_array() && !v.is_object()) h.facts.emplace_back(std::string(k), text_of(v));
  }
  present::Page page(std::move(h));
  if (kind == "host-roofline") {
    page.section("Roofline", roofline_body(*result));
  } else if (kind == "hbm-profiled-kernel-active-time") {
    page.section("Bandwidth", hbm_body(*result, *inputs));
  } else {
    present::Table t({"figure", "value"});
    for (const auto& [k, v] : *result) {
      if (!v.is_array() && !v.is_object()) t.row({std::string(k), text_of(v)});
    }
    page.section("Sample", t.html("sample"));
  }
  if (const auto* statements = json_array(*result, "statements")) {
    std::vector<std::string> items;
    for (const auto& s : *statements) items.push_back(text_of(s));
    page.section("What this figure is", present::bullets(items));
  }
  return page.html();
}

}  // namespace mpo::bandwidth
