// The error catalog (core/error_codes.hpp): one row per code, well formed, and docs/ERRORS.md row
// for row as the table has it.
#include "core/error_codes.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/result.hpp"
#include "support/build_paths.hpp"

namespace mpo {
namespace {

TEST(ErrorCatalog, EveryCodeIsWellFormedSortedAndOnce) {
  const std::regex shape("[a-z0-9_]+\\.[a-z0-9_]+");
  std::string_view previous;
  for (const ErrorInfo& e : error_catalog()) {
    EXPECT_TRUE(std::regex_match(std::string(e.code.name()), shape)) << e.code.name();
    EXPECT_LT(previous, e.code.name()) << "not sorted, or twice: " << e.code.name();
    previous = e.code.name();
    EXPECT_TRUE(e.exit_code == 0 || e.exit_code == 1 || e.exit_code == 2 || e.exit_code == 3) << e.code.name();
    EXPECT_FALSE(e.meaning.empty()) << e.code.name();
    EXPECT_EQ(find_error(e.code.name()), &e);
  }
  EXPECT_EQ(find_error("no.such_code"), nullptr);
}

TEST(ErrorCatalog, AnErrorKeepsItsCodeWhenToldAgainAndSaysItsExitCode) {
  const Error usage = make_error(errc::kReportMaxRegression, "--max-regression x: ...");
  EXPECT_EQ(usage.code, "report.max_regression");
  EXPECT_EQ(exit_code_of(usage), 2);
  const Error again = make_error(usage, "while reading the baseline: " + usage.message);
  EXPECT_EQ(again.code, "report.max_regression");
  EXPECT_EQ(exit_code_of(make_error(errc::kLedgerOpen, "cannot open")), 1);
  // A code that ends no command (a request answered 400) exits 1 where a command stops on it.
  EXPECT_EQ(exit_code_of(make_error(errc::kRequestBad, "bare LF")), 1);
}

TEST(ErrorCatalog, DocsListEveryCodeAsTheTableHasIt) {
  std::ifstream in(std::string(test::source_dir()) + "/docs/ERRORS.md");
  ASSERT_TRUE(in) << "docs/ERRORS.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  std::set<std::string> rows;
  for (const ErrorInfo& e : error_catalog()) {
    const std::string row = fmt::format("| `{}` | {} | {} |\n", e.code.name(), e.exit_code, e.meaning);
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/ERRORS.md lacks the row\n" << row;
    rows.insert(row);
  }
  // ... and no row the table does not have.
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) == 0) {
      EXPECT_TRUE(rows.count(line + "\n")) << "docs/ERRORS.md has a row the table lacks\n" << line;
    }
  }
}

}  // namespace
}  // namespace mpo
