// The Nsight Compute importer on real and synthetic captures, every fail-closed case with its
// exact message, and the receipt it feeds.
#include "bandwidth/ncu_import.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bandwidth/csv.hpp"
#include "bandwidth/receipt.hpp"
#include "support/fixtures.hpp"

namespace mpo::bandwidth {
namespace {

constexpr const char* kFakDetails = "ncu/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv";
constexpr const char* kSameAsRaw = "ncu/SYNTHETIC_raw-page_same-capture-as-fak-details.csv";
constexpr const char* kNewColumns = "ncu/SYNTHETIC_details_new-columns_rules_trailing-comma_na-write.csv";
constexpr const char* kReal2020 = "ncu/ncu-2020_details-page_kerneltime-col_hotspot1024_v100.csv";

CaptureContext context() {
  CaptureContext c;
  c.file = "capture.csv";
  c.device = "NVIDIA H100 80GB HBM3 (0)";
  c.capture_start_us = 1'787'824'800'000'000;  // 2026-08-27T10:00:00Z
  c.capture_end_us = c.capture_start_us + 60'000'000;
  c.phase = Phase::kDecode;
  c.shape = Shape::kLarge;
  c.device_roofline_gb_s = 1250;
  return c;
}

TEST(NcuImport, FakDetailsFixtureGivesFaksFigures) {
  auto im = import_ncu_csv(test::read_fixture(kFakDetails));
  ASSERT_TRUE(im.ok()) << im.error().message;
  EXPECT_EQ(im->layout, NcuLayout::kDetails);
  EXPECT_EQ(im->launch_count, 2u);
  EXPECT_EQ(im->process_id, "4242");
  EXPECT_EQ(im->process_name, "fak");
  EXPECT_TRUE(im->host_column);
  EXPECT_EQ(*im->profiler_device, "0");
  EXPECT_EQ(*im->read_bytes, 1'500'000'000u);
  EXPECT_EQ(*im->write_bytes, 500'000'000u);
  EXPECT_EQ(*im->duration_ns, 2'000'000.0);
  const Rates r = compute_rates(im->read_bytes, im->write_bytes, im->duration_ns, std::nullopt, 1250.0);
  EXPECT_EQ(*r.read_gb_s, 750.0);
  EXPECT_EQ(*r.write_gb_s, 250.0);
  EXPECT_EQ(*r.total_gb_s, 1000.0);
  EXPECT_EQ(*r.utilization_of_device_roofline, 0.8);
}

TEST(NcuImport, TheTwoLayoutsOfOneCaptureGiveIdenticalReceipts) {
  auto details = import_ncu_csv(test::read_fixture(kFakDetails));
  auto raw = import_ncu_csv(test::read_fixture(kSameAsRaw));
  ASSERT_TRUE(details.ok() && raw.ok());
  EXPECT_EQ(raw->layout, NcuLayout::kRaw);
  const auto a = ncu_receipt_json(*details, context(), 1'790'000'000'000'000, "t");
  const auto b = ncu_receipt_json(*raw, context(), 1'790'000'000'000'000, "t");
  EXPECT_EQ(a, b);
  auto v = verify_receipt(a);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->kind, "hbm-profiled-kernel-active-time");
}

TEST(NcuImport, NewColumnSetRulesTrailingCommasAndAnUnavailableDirection) {
  auto im = import_ncu_csv(test::read_fixture(kNewColumns));
  ASSERT_TRUE(im.ok()) << im.error().message;
  EXPECT_EQ(*im->read_bytes, 1'073'741'824u + 4096u);  // thousands separators removed
  EXPECT_FALSE(im->write_bytes.has_value());           // one launch said n/a: the direction is unavailable
  EXPECT_EQ(*im->duration_ns, 412'800.0 + 3'200.0);
  ASSERT_EQ(im->unavailable.size(), 1u);
  EXPECT_EQ(im->unavailable[0], "dram__bytes_write.sum of launch 0 is \"n/a\" (line 4)");
  ASSERT_EQ(im->kernels.size(), 2u);
  EXPECT_EQ(im->kernels[0].name, "paged_attention_v2_kernel<__nv_bfloat16>(float *, const __nv_bfloat16 *, int)");
  EXPECT_FALSE(im->kernels[0].write_bytes.has_value());
  EXPECT_EQ(*im->kernels[1].write_bytes, 8192u);
  const std::string receipt = ncu_receipt_json(*im, context(), 1'790'000'000'000'000, "t");
  // Unavailable values are omitted, never written as 0.
  EXPECT_EQ(receipt.find("cumulative_write_bytes"), std::string::npos);
  EXPECT_EQ(receipt.find("write_gb_s"), std::string::npos);
  EXPECT_EQ(receipt.find("total_gb_s"), std::string::npos);
  EXPECT_NE(receipt.find("\"read_gb_s\""), std::string::npos);
  EXPECT_TRUE(verify_receipt(receipt).ok());
}

TEST(NcuImport, Real2020CaptureWithoutTheMetricsFailsClosed) {
  auto im = import_ncu_csv(test::read_fixture(kReal2020));
  ASSERT_FALSE(im.ok());
  EXPECT_EQ(im.error().code, "ncu.metric");
  EXPECT_EQ(im.error().message,
            "the CSV has none of the required metrics dram__bytes_read.sum, dram__bytes_write.sum, "
            "gpu__time_duration.sum (details layout); capture with: ncu --csv --page raw --print-units base "
            "--print-metric-name name --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum");
}

constexpr const char* kHeader =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Device\",\"Metric Name\",\"Metric Unit\","
    "\"Metric Value\"\n";

std::string row(const char* id, const char* metric, const char* unit, const char* value, const char* pid = "7",
                const char* host = "h", const char* device = "0") {
  return fmt::format("\"{}\",\"{}\",\"app\",\"{}\",\"k\",\"{}\",\"{}\",\"{}\",\"{}\"\n", id, pid, host, device, metric,
                     unit, value);
}

std::string launch(const char* id, const char* read = "100", const char* write = "50", const char* ns = "10") {
  return row(id, "dram__bytes_read.sum", "byte", read) + row(id, "dram__bytes_write.sum", "byte", write) +
         row(id, "gpu__time_duration.sum", "nsecond", ns);
}

struct FailCase {
  std::string csv;
  const char* code;
  const char* message;
};

TEST(NcuImport, EveryFailClosedCaseNamesTheLaunchAndMetric) {
  const std::string ok = std::string(kHeader) + launch("1");
  const FailCase cases[] = {
      {"==PROF== nothing here\nsome app output\n", "ncu.header",
       "Nsight Compute CSV header not found: no row names the columns \"ID\", \"Process ID\" and \"Process Name\"; "
       "capture with: ncu --csv --page raw --print-units base --print-metric-name name --metrics "
       "dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"},
      {std::string(kHeader) + row("1", "dram__bytes_read.sum", "byte", "100") +
           row("1", "gpu__time_duration.sum", "nsecond", "10"),
       "ncu.metric",
       "launch 1 is missing dram__bytes_write.sum; capture with: ncu --csv --page raw --print-units base "
       "--print-metric-name name --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"},
      {ok + row("1", "dram__bytes_read.sum", "byte", "100"), "ncu.metric",
       "launch 1 has duplicate metric dram__bytes_read.sum (lines 2 and 5)"},
      {std::string(kHeader) + row("1", "dram__bytes_read.sum", "Kbyte", "100") +
           row("1", "dram__bytes_write.sum", "byte", "1") + row("1", "gpu__time_duration.sum", "nsecond", "10"),
       "ncu.unit",
       "dram__bytes_read.sum of launch 1 must use a base unit (byte), got \"Kbyte\" (line 2); pass --print-units base "
       "to ncu"},
      {std::string(kHeader) + row("1", "dram__bytes_read.sum", "byte", "1") +
           row("1", "dram__bytes_write.sum", "byte", "1") + row("1", "gpu__time_duration.sum", "usecond", "10"),
       "ncu.unit",
       "gpu__time_duration.sum of launch 1 must use a base unit (nsecond), got \"usecond\" (line 4); pass "
       "--print-units "
       "base to ncu"},
      {std::string(kHeader) + launch("1", "100.5"), "ncu.value",
       "dram__bytes_read.sum of launch 1 is \"100.5\", not a non-negative integer byte count (line 2)"},
      {ok + row("2", "dram__bytes_read.sum", "byte", "1", "8"), "ncu.mixed",
       "mixed-process capture: 7/app and 8/app (line 5); profile one process per file"},
      {ok + row("2", "dram__bytes_read.sum", "byte", "1", "7", "other-host"), "ncu.mixed",
       "mixed-host capture: launch 2 (line 5) names another host than launch 1; profile one host per file"},
      {ok + row("2", "dram__bytes_read.sum", "byte", "1", "7", "h", "1"), "ncu.mixed",
       "mixed-device capture: \"0\" and \"1\" (launch 2, line 5); profile one device with --devices N"},
      {ok + row("2", "dram__bytes_read.sum", "byte", "1", "7", "h", ""), "ncu.mixed",
       "line 5: launch 2 has an empty Device field"},
      {std::string(kHeader) + launch("1", "100", "50", "0"), "ncu.duration",
       "the cumulative profiled kernel duration of 1 launch(es) is zero while bytes were counted; the capture cannot "
       "give a bandwidth"},
      {ok + kHeader + launch("2"), "ncu.header",
       "line 5: a second header block; one capture per file (ncu appends when --log-file names an existing file)"},
      {std::string(kHeader) + launch("1", "100", "50", "-3"), "ncu.value",
       "gpu__time_duration.sum of launch 1 is \"-3\", not a finite non-negative number of nanoseconds (line 4)"},
      {std::string(kHeader) + "\"1\",\"7\",\"app\",\"h\",\"k\",\"0\",\"dram__bytes_read.sum\"\n", "ncu.csv",
       "line 2: a row with 7 fields, fewer than the header's Metric Value column"},
      {std::string(kHeader) + "\"1\",\"7\",\"app\",\"h\",\"k\",\"0\",\"dram__bytes_read.sum\",\"byte\",\"12\n",
       "ncu.csv", "line 2: a quoted field is not closed before the end of the file"},
      {"\"ID\",\"Process ID\",\"Process Name\",\"dram__bytes_read.sum\"\n\"1\",\"7\",\"app\",\"5\"\n", "ncu.unit",
       "line 2: the --page raw table has no units row after its header; capture with: ncu --csv --page raw "
       "--print-units "
       "base --print-metric-name name --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum"},
  };
  for (const FailCase& c : cases) {
    auto im = import_ncu_csv(c.csv);
    ASSERT_FALSE(im.ok()) << c.csv;
    EXPECT_EQ(im.error().code, c.code) << c.csv;
    EXPECT_EQ(im.error().message, c.message) << c.csv;
  }
}

TEST(NcuImport, UnavailableSpellingsMakeOnlyThatDirectionUnavailable) {
  for (const char* na : {"N/A", "n/a", "[Not Supported]", "not supported", ""}) {
    auto im = import_ncu_csv(std::string(kHeader) + launch("1", "100", na, "10"));
    ASSERT_TRUE(im.ok()) << na << ": " << im.error().message;
    EXPECT_EQ(*im->read_bytes, 100u);
    EXPECT_FALSE(im->write_bytes.has_value()) << na;
  }
}

TEST(NcuImport, QuotedNewlinesAndCrlfAreOneRecord) {
  const std::string csv =
      "app output\r\n\"ID\",\"Process ID\",\"Process Name\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\","
      "\"Metric Value\"\r\n"
      "\"1\",\"7\",\"app\",\"k<\nmultiline>\",\"dram__bytes_read.sum\",\"byte\",\"5\"\r\n"
      "\"1\",\"7\",\"app\",\"k<\nmultiline>\",\"dram__bytes_write.sum\",\"byte\",\"5\"\r\n"
      "\"1\",\"7\",\"app\",\"k<\nmultiline>\",\"gpu__time_duration.sum\",\"ns\",\"5\"\r\n";
  auto im = import_ncu_csv(csv);
  ASSERT_TRUE(im.ok()) << im.error().message;
  EXPECT_EQ(im->kernels[0].name, "k<\nmultiline>");
  EXPECT_FALSE(im->host_column);
  EXPECT_FALSE(im->profiler_device.has_value());
}

TEST(ByteCount, ExactIntegersOnly) {
  EXPECT_EQ(*parse_byte_count("1,500"), 1500u);
  EXPECT_EQ(*parse_byte_count("500.0"), 500u);
  EXPECT_EQ(*parse_byte_count("5e2"), 500u);
  EXPECT_EQ(*parse_byte_count("1.5e3"), 1500u);
  EXPECT_EQ(*parse_byte_count("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"500.5", "-1", "1e-2", "18446744073709551616", "abc", "", "1.5e0", "0x10"}) {
    EXPECT_FALSE(parse_byte_count(bad).has_value()) << bad;
  }
}

TEST(Receipt, VerifyCatchesTamperingAndNulls) {
  auto im = import_ncu_csv(test::read_fixture(kFakDetails));
  ASSERT_TRUE(im.ok());
  const std::string good = ncu_receipt_json(*im, context(), 1'790'000'000'000'000, "t");
  ASSERT_TRUE(verify_receipt(good).ok());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> tampered[] = {
      {replace("\"total_gb_s\":1000", "\"total_gb_s\":1100"),
       "result.total_gb_s is 1100 but read_gb_s + write_gb_s gives 1000"},
      {replace("\"cumulative_write_bytes\":500000000,", ""), "result.write_gb_s is present but cannot be derived"},
      {replace("\"read_gb_s\":750,", "\"read_gb_s\":null,"), "$.result.read_gb_s is null"},
      {replace("\"capture_ended_at\":\"2026-08-27T10:01:00.000000Z\"", "\"capture_ended_at\":\"2026-08-27T09:00:00Z\""),
       "the capture window ends before it starts"},
      {replace("\"kind\":\"hbm-profiled-kernel-active-time\"",
               "\"kind\":\"hbm-profiled-kernel-active-time\",\"extra\":1"),
       "result has an unknown field \"extra\""},
      {good + "{}", "not one JSON document"},
      {replace("\"valid\":true", "\"valid\":false"),
       "validity.valid must be true exactly when a total bandwidth exists"},
  };
  for (const auto& [json, why] : tampered) {
    auto v = verify_receipt(json);
    ASSERT_FALSE(v.ok()) << json;
    EXPECT_NE(v.error().message.find(why), std::string::npos) << v.error().message;
  }
  // The per-kernel breakdown, the fixed texts and the reasons are checked too.
  auto in_kernels = [&](const std::string& key) {
    std::string s = good;
    const auto at = s.find("\"" + key + "\":", s.find("\"kernels\":["));
    EXPECT_NE(at, std::string::npos) << key;
    return s.insert(at + key.size() + 3, "1");
  };
  const std::pair<std::string, std::string> more[] = {
      {in_kernels("read_bytes"), "result.kernels' read_bytes add up to"},
      {in_kernels("duration_ns"), "result.kernels' duration_ns add up to"},
      {replace("Not request wall-time throughput.", "Request throughput."), "result.statements are not"},
      {replace("sum-cumulative-bytes-over", "max-bytes-over"), "result.aggregation_scope must be"},
      {replace("\"reasons\":[]", "\"reasons\":[\"fine\"]"), "validity.reasons do not follow"},
  };
  for (const auto& [json, why] : more) {
    auto v = verify_receipt(json);
    ASSERT_FALSE(v.ok()) << json;
    EXPECT_NE(v.error().message.find(why), std::string::npos) << v.error().message;
  }
}

TEST(Receipt, HostSampleIsNeverHbmEvidence) {
  HostSample s;
  s.measured_roofline_gb_s = 20;
  s.bytes = 10'000'000'000;
  s.seconds = 1;
  s.bytes_evidence = "weights 5 GB x 2 decode steps";
  s.capture_start_us = 1;
  s.capture_end_us = 2'000'000;
  ASSERT_TRUE(check_host_sample(s).ok());
  const std::string receipt = host_sample_receipt_json(s, 1'790'000'000'000'000, "t");
  auto v = verify_receipt(receipt);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->kind, "host-memory-sample");
  EXPECT_NE(v->summary.find("not HBM evidence"), std::string::npos);
  // An HBM field smuggled into a host sample is refused.
  std::string smuggled = receipt;
  smuggled.insert(smuggled.find("\"kind\""), "\"total_gb_s\":10,");
  EXPECT_FALSE(verify_receipt(smuggled).ok());
}

TEST(Receipt, ContextChecks) {
  CaptureContext c = context();
  c.device = " ";
  EXPECT_EQ(check_context(c).error().code, "bandwidth.device");
  c = context();
  c.capture_end_us = c.capture_start_us;
  EXPECT_EQ(check_context(c).error().code, "bandwidth.window");
  c = context();
  c.theoretical_gb_s = 0;
  EXPECT_EQ(check_context(c).error().message, "--theoretical-gb-s must be a number above 0");
}

}  // namespace
}  // namespace mpo::bandwidth
