#include "openai/sse_framer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mpo::openai {
namespace {

std::vector<std::string> frame(const std::vector<std::string>& pieces, SseFramer* out = nullptr) {
  SseFramer f;
  std::vector<std::string> events;
  for (const auto& p : pieces) f.feed(p, [&](const SseEvent& e) { events.emplace_back(e.data); });
  if (out) *out = f;
  return events;
}

TEST(SseFramer, AcceptsLfCrlfAndCrLineEnds) {
  for (const std::string nl : {"\n", "\r\n", "\r"}) {
    const std::string s = "data: a" + nl + nl + "data: b" + nl + nl;
    EXPECT_EQ(frame({s}), (std::vector<std::string>{"a", "b"})) << (nl == "\r" ? "CR" : nl == "\n" ? "LF" : "CRLF");
  }
}

TEST(SseFramer, SameEventsWhenSplitAtEveryByte) {
  const std::string s = "data: {\"x\":1}\r\n\r\n: keep-alive\r\ndata: line1\r\ndata: line2\r\n\r\ndata: [DONE]\r\n\r\n";
  const auto whole = frame({s});
  ASSERT_EQ(whole, (std::vector<std::string>{"{\"x\":1}", "line1\nline2", "[DONE]"}));
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(frame({s.substr(0, cut), s.substr(cut)}), whole) << "cut at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : s) bytes.emplace_back(1, c);
  EXPECT_EQ(frame(bytes), whole);
}

TEST(SseFramer, DataWaitingForItsBlankLineOutlivesTheBytesItCameIn) {
  // An event's data is read where it lies in the bytes fed, and kept only when the event goes on
  // past them (issue 43): each read here reuses one buffer, as the proxy's reads do.
  SseFramer f;
  std::vector<std::string> events;
  std::string buffer;
  for (const std::string piece : {"data: line1\n", "data: line2\n", "\n", "data: {\"a\"", ":1}\n", "\ndata: x\n\n"}) {
    buffer.assign(64, '#');  // what the last read left is overwritten first
    buffer.assign(piece);
    f.feed(buffer, [&](const SseEvent& e) { events.emplace_back(e.data); });
  }
  EXPECT_EQ(events, (std::vector<std::string>{"line1\nline2", "{\"a\":1}", "x"}));
}

TEST(SseFramer, CountsCommentsAndIgnoresIdRetryAndEventFields) {
  SseFramer f;
  std::vector<std::string> names;
  f.feed(": ping\n\nevent: error\nid: 7\nretry: 10\ndata: x\n\n",
         [&](const SseEvent& e) { names.emplace_back(e.event); });
  EXPECT_EQ(names, std::vector<std::string>{"error"});
  EXPECT_EQ(f.comments(), 1u);
  EXPECT_EQ(f.unknown_lines(), 0u);
}

TEST(SseFramer, ReportsAPartialEventAtEndOfStream) {
  SseFramer f;
  int n = 0;
  f.feed("data: a\n\ndata: trunc", [&](const SseEvent&) { ++n; });
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(f.has_partial());
}

TEST(SseFramer, CountsGarbageLines) {
  SseFramer f;
  int n = 0;
  f.feed("<html>oops</html>\n\n", [&](const SseEvent&) { ++n; });
  EXPECT_EQ(n, 0);
  EXPECT_EQ(f.unknown_lines(), 1u);
}

TEST(SseFramer, DataWithoutSpaceAndEmptyData) {
  EXPECT_EQ(frame({"data:x\n\ndata:\n\n"}), (std::vector<std::string>{"x", ""}));
}

TEST(SseFramer, ADataFieldWithoutAColonIsEmptyDataThatPointsIntoTheBytes) {
  // "data" alone is the data field with an empty value (WHATWG). Read where it lies, the empty
  // value is a view into the line, not a null view: the JSON parser it is handed to copies from it
  // (UBSan: a null pointer passed to memcpy; found by fuzz_sse_framer, twenty-sixth session).
  SseFramer f;
  std::vector<std::string_view> seen;
  f.feed("data\r\r", [&](const SseEvent& e) { seen.push_back(e.data); });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].empty());
  EXPECT_NE(seen[0].data(), nullptr);
}

}  // namespace
}  // namespace mpo::openai

namespace mpo::openai {
namespace {

TEST(SseFramer, ALineOverTheCapIsCutAndItsExtraBytesCounted) {
  SseFramer f;
  std::vector<std::size_t> sizes;
  const std::string head = "data: ";
  const std::string body(SseFramer::kMaxLine, 'x');  // with "data: " 6 bytes over the cap
  f.feed(head, [&](const SseEvent& e) { sizes.push_back(e.data.size()); });
  f.feed(body.substr(0, 1000), [&](const SseEvent& e) { sizes.push_back(e.data.size()); });
  f.feed(std::string_view(body).substr(1000), [&](const SseEvent& e) { sizes.push_back(e.data.size()); });
  f.feed("yz\n\ndata: next\n\n", [&](const SseEvent& e) { sizes.push_back(e.data.size()); });
  EXPECT_EQ(f.oversized_lines(), 8u);  // the 6 bytes past the cap, then "yz"
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[0], SseFramer::kMaxLine - head.size());
  EXPECT_EQ(sizes[1], 4u);  // the next line starts afresh
}

}  // namespace
}  // namespace mpo::openai
