// The admin listener's /lines: numbered recent ledger lines, a reader that falls behind told how
// many it missed, a reader from another proxy's numbering starting over.
#include "proxy/recent_lines.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace mpo::proxy {
namespace {

std::vector<std::string> lines_of(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(RecentLines, NumbersTheLinesAndAnswersWhatCameAfter) {
  RecentLines r(4);
  EXPECT_EQ(r.since(0, 10), "{\"schema\":\"modelperfobs.recent-lines.v1\",\"next\":0,\"missed\":0}\n");
  for (const char* l : {"{\"a\":1}\n", "{\"a\":2}\n", "{\"a\":3}"}) r.add(l);
  auto got = lines_of(r.since(0, 10));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "{\"schema\":\"modelperfobs.recent-lines.v1\",\"next\":3,\"missed\":0}");
  EXPECT_EQ(got[1], "{\"a\":1}");
  EXPECT_EQ(got[3], "{\"a\":3}");
  got = lines_of(r.since(2, 10));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], "{\"a\":3}");
  EXPECT_EQ(lines_of(r.since(3, 10)).size(), 1u);  // nothing new
  // At most `max` a call; the next call goes on from where it stopped.
  got = lines_of(r.since(0, 2));
  EXPECT_EQ(got[0], "{\"schema\":\"modelperfobs.recent-lines.v1\",\"next\":2,\"missed\":0}");
  EXPECT_EQ(got.size(), 3u);
}

TEST(RecentLines, AReaderThatFellBehindIsToldHowManyItMissed) {
  RecentLines r(3);
  for (int i = 1; i <= 10; ++i) r.add("{\"n\":" + std::to_string(i) + "}");
  const auto got = lines_of(r.since(2, 100));  // lines 3..7 are gone
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "{\"schema\":\"modelperfobs.recent-lines.v1\",\"next\":10,\"missed\":5}");
  EXPECT_EQ(got[1], "{\"n\":8}");
  // A reader ahead of this proxy's numbering (it restarted): told where it stands, then reads on.
  EXPECT_EQ(lines_of(r.since(500, 100))[0], "{\"schema\":\"modelperfobs.recent-lines.v1\",\"next\":10,\"missed\":0}");
}

TEST(RecentLines, OldLinesTextGoesWithThemAndKeptLinesReadWhole) {
  // The text is kept in blocks (64 bytes here) dropped once none of their lines is kept: lines that
  // straddle where a block would end, one longer than a block, and many more than the ring holds.
  RecentLines r(5, 64);
  std::vector<std::string> added;
  for (int i = 1; i <= 400; ++i) {
    const std::string line =
        "{\"n\":" + std::to_string(i) + ",\"pad\":\"" + std::string(i % 37 == 0 ? 150 : i % 11, 'x') + "\"}";
    r.add(line + "\n");
    added.push_back(line);
    EXPECT_LE(r.blocks(), 5u + 1u) << "line " << i;
    const auto got = lines_of(r.since(0, 100));
    const std::size_t kept = std::min<std::size_t>(5, added.size());
    ASSERT_EQ(got.size(), kept + 1) << "line " << i;
    for (std::size_t k = 0; k < kept; ++k) ASSERT_EQ(got[k + 1], added[added.size() - kept + k]) << "line " << i;
  }
}

TEST(RecentLines, DroppedBlocksAreFilledAgainOnceTheRingIsFull) {
  // A new block's memory is touched page by page as lines are copied in (a page fault every few
  // lines): once the ring is full, the blocks dropped last are filled again instead.
  RecentLines r(20, 256);
  std::size_t most_kept = 0;
  for (int i = 1; i <= 5000; ++i) {
    r.add("{\"n\":" + std::to_string(i) + ",\"pad\":\"" + std::string(static_cast<std::size_t>(i % 13), 'x') + "\"}\n");
    most_kept = std::max(most_kept, r.blocks());
  }
  EXPECT_LE(r.blocks_allocated(), most_kept + 2);
  const auto got = lines_of(r.since(4990, 100));
  ASSERT_EQ(got.size(), 11u);
  EXPECT_EQ(got[10], "{\"n\":5000,\"pad\":\"" + std::string(5000 % 13, 'x') + "\"}");
}

}  // namespace
}  // namespace mpo::proxy
