// docs/METRICS.md lists every catalog entry, row for row as the table in src/engines/catalog.cpp
// has it: an entry added, changed or split without its row here fails.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engines/catalog.hpp"
#include "support/build_paths.hpp"

namespace mpo::engines {
namespace {

std::string engines_text(std::uint32_t engines) {
  if (engines == kAnyVllm) return "vLLM V0+V1";
  if (engines == engine_bit(Engine::kVllmV1)) return "vLLM V1";
  if (engines == engine_bit(Engine::kVllmV0)) return "vLLM V0";
  if (engines == engine_bit(Engine::kSglang)) return "SGLang";
  if (engines == engine_bit(Engine::kLlamaCpp)) return "llama.cpp";
  if (engines == engine_bit(Engine::kTgi)) return "TGI";
  return "any";
}

// The row docs/METRICS.md has for one entry: | engine | signal | `series{label="value"}` | meaning |
std::string row(const CatalogEntry& e) {
  // fmt rather than operator+ on strings: g++ 12 warns falsely (-Wstringop-overflow) on the chain.
  const std::string series =
      e.label.empty() ? fmt::format("`{}`", e.family) : fmt::format("`{}{{{}=\"{}\"}}`", e.family, e.label, e.value);
  std::string meaning(e.meaning);
  if (e.read == Read::kHistogramSum) meaning += " (read: the histogram's `_sum`)";
  if (!e.split.empty()) meaning += fmt::format(" (kept apart by `{}`)", e.split);
  return fmt::format("| {} | {} | {} | {} |\n", engines_text(e.engines), signal_name(e.signal), series, meaning);
}

TEST(CatalogDoc, EveryEntryHasItsRow) {
  std::ifstream in(std::string(mpo::test::source_dir()) + "/docs/METRICS.md");
  ASSERT_TRUE(in) << "docs/METRICS.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const CatalogEntry& e : catalog()) {
    EXPECT_NE(doc.find(row(e)), std::string::npos) << "docs/METRICS.md lacks the row\n" << row(e);
  }
}

}  // namespace
}  // namespace mpo::engines
