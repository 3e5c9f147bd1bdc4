// docs/METRICS.md lists every catalog entry: a series added to the table without its row here fails.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "promtext/catalog.hpp"

namespace mpo::promtext {
namespace {

TEST(CatalogDoc, EverySeriesAndSignalIsDocumented) {
  std::ifstream in(std::string(MPO_SOURCE_DIR) + "/docs/METRICS.md");
  ASSERT_TRUE(in) << "docs/METRICS.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  for (const CatalogEntry& e : catalog()) {
    std::string series = "`" + std::string(e.family);
    if (!e.label.empty()) series += "{" + std::string(e.label) + "=\"" + std::string(e.value) + "\"}";
    EXPECT_NE(doc.find(series), std::string::npos) << series << " is not in docs/METRICS.md";
    EXPECT_NE(doc.find("| " + std::string(signal_name(e.signal)) + " |"), std::string::npos) << signal_name(e.signal);
  }
}

}  // namespace
}  // namespace mpo::promtext
