// Fuzz target: sweep receipts, workload files and the server's own word on its capacity (llama.cpp's
// GET /props slots, SGLang's GET /server_info running-request cap: the sweep's capacity where none is
// declared). Nothing crashes; a capacity it takes is positive; a receipt that parses
// writes back to text that parses to the same text; once re-derived from its samples and evaluated, a receipt verifies
// (what the runner writes always verifies); the gate never crashes on anything.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engines/server_props.hpp"
#include "loadgen/workload.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/receipt.hpp"
#include "sweep/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mpo::sweep;
  namespace loadgen = mpo::loadgen;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)loadgen::parse_web_tasks(text, loadgen::WebTaskOptions{3, 8, "p"});
  (void)loadgen::parse_sharegpt(text, {});
  (void)loadgen::parse_length_distribution(text.substr(0, 64));
  if (const auto slots = mpo::engines::parse_llamacpp_props(text); slots && slots->slots <= 0) std::abort();
  if (const auto cap = mpo::engines::parse_sglang_server_info(text, "/server_info");
      cap && (cap->slots <= 0 || cap->slots > 1'000'000 || cap->dp_size <= 0)) {
    std::abort();
  }
  auto r = parse_sweep_receipt(text);
  if (r) {
    // Bounded work per input: verifying bootstraps every point's p99s (1,000 resamples each).
    std::size_t samples = 0;
    for (const auto& p : r->points)
      for (const auto& tp : p.tracks) samples += tp.samples.size();
    if (samples > 256 || r->points.size() > 64) return 0;
  }
  (void)gate_claim("ours capacity-valid peak and sla knee", text);  // verifies the text first
  if (!r) return 0;
  const std::string once = receipt_text(*r);
  auto again = parse_sweep_receipt(once);
  if (!again || receipt_text(*again) != once) std::abort();
  rederive_from_samples(*r);
  if (!evaluate_sweep(*r).ok()) return 0;
  const auto v = verify_sweep(receipt_text(*r));
  if (!v.holds) std::abort();
  return 0;
}
