// docs/METRICS.md lists every catalog entry, row for row as the table in src/promtext/catalog.cpp
// has it: an entry added, changed or split without its row here fails.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "promtext/catalog.hpp"
#include "support/build_paths.hpp"

namespace mpo::promtext {
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
  std::string series = "`" + std::string(e.family);
  if (!e.label.empty()) series += "{" + std::string(e.label) + "=\"" + std::string(e.value) + "\"}";
  series += "`";
  std::string meaning(e.meaning);
  if (e.read == Read::kHistogramSum) meaning += " (read: the histogram's `_sum`)";
  if (!e.split.empty()) meaning += " (kept apart by `" + std::string(e.split) + "`)";
  return "| " + engines_text(e.engines) + " | " + std::string(signal_name(e.signal)) + " | " + series + " | " +
         meaning + " |\n";
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
}  // namespace mpo::promtext
