// Fuzz target: attribution over arbitrary snapshot lines and ledger lines (the input split at its
// first NUL byte, or in half), every window mode, every output format. Nothing crashes, the output
// documents parse as JSON, and shuffling nothing changes nothing (two runs give the same bytes).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "attribution/adapter.hpp"
#include "attribution/render.hpp"
#include "core/go_json.hpp"
#include "ledger/reader.hpp"
#include "scrape/snapshot_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mpo;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)attribution::parse_window(text.substr(0, 80));
  auto cut = text.find('\0');
  if (cut == std::string_view::npos) cut = text.size() / 2;
  const auto snaps = scrape::read_snapshots(text.substr(0, cut));
  const auto ledger = ledger::read_ledger(cut < text.size() ? text.substr(cut + 1) : std::string_view());
  if (snaps.snapshots.size() > 64 || ledger.records.size() > 256) return 0;
  for (auto mode : {attribution::WindowMode::kConsecutive, attribution::WindowMode::kPerRequest}) {
    attribution::WindowChoice choice;
    choice.mode = mode;
    const auto run = attribution::attribute_run(snaps.snapshots, ledger.records, choice, 30'000'000);
    attribution::RunInputs in;
    const std::string json = attribution::attribution_json(run, in);
    if (!parse_exact_json(json).ok()) std::abort();
    const auto again = attribution::attribute_run(snaps.snapshots, ledger.records, choice, 30'000'000);
    if (attribution::attribution_json(again, in) != json) std::abort();
    const std::string fak = attribution::fak_json_lines(run);
    std::size_t pos = 0;
    while (pos < fak.size()) {
      const auto nl = fak.find('\n', pos);
      if (!parse_exact_json(std::string_view(fak).substr(pos, nl - pos)).ok()) std::abort();
      pos = nl + 1;
    }
    (void)attribution::attribution_markdown(run, in);
  }
  return 0;
}
