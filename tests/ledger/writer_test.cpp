#include "ledger/writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace mpo::ledger {
namespace {

std::string temp_dir() {
  std::string t = "/tmp/mpo-ledger-XXXXXX";
  return mkdtemp(t.data());
}

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LedgerWriter, CreatesFoldersAndAppendsEveryAcceptedLine) {
  const std::string path = temp_dir() + "/runs/qwen/model-perf.jsonl";
  LedgerWriter w({path, FsyncPolicy::kAlways, 1.0, 1024});
  ASSERT_TRUE(w.open().ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(w.submit("{\"n\":" + std::to_string(i) + "}\n"));
  w.close();
  const std::string text = slurp(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 100);
  EXPECT_EQ(text.substr(0, 8), "{\"n\":0}\n");
  EXPECT_EQ(w.lines_written(), 100u);
}

TEST(LedgerWriter, ObservationsAreRenderedOnItsThreadAndEveryBatchIsHandedOnInOrder) {
  // A proxy's loop gives its observations as they are (issue 43): the ledger gets each one's line
  // as render_observation writes it, in the order given among plain lines, and on_lines sees every
  // line once, in that order, before it is written.
  const std::string path = temp_dir() + "/model-perf.jsonl";
  LedgerWriter::Options opts{path, FsyncPolicy::kNever, 1.0, 1024};
  std::vector<std::string> seen;  // written by the writer's thread only, read after close()
  opts.on_lines = [&seen](std::span<const std::string_view> lines) {
    seen.insert(seen.end(), lines.begin(), lines.end());
  };
  LedgerWriter w(opts);
  ASSERT_TRUE(w.open().ok());
  std::string expected;
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0) {
      const std::string line = "{\"n\":" + std::to_string(i) + "}\n";
      expected += line;
      ASSERT_TRUE(w.submit(line));
      continue;
    }
    auto o = std::make_unique<Observation>();
    o->observation_id = "obs-" + std::to_string(i);
    o->model = "m\"odel";
    o->ttft_ms = i * 0.5;
    expected += render_observation(*o);
    ASSERT_TRUE(w.submit(std::move(o)));
    if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // several batches
  }
  w.close();
  EXPECT_EQ(slurp(path), expected);
  std::string handed;
  for (const auto& l : seen) handed += l;
  EXPECT_EQ(handed, expected);
  EXPECT_EQ(w.lines_written(), 300u);
}

TEST(LedgerWriter, AWrittenObservationComesBackClearedWithItsLongStringsBuffers) {
  // A proxy takes an observation, fills it and submits it; once its line is written the writer
  // keeps it, cleared, for the next request (issue 43): the next line starts as a new
  // observation's, and its id, path and gaps are written into the buffers already there.
  const std::string path = temp_dir() + "/recycled.jsonl";
  LedgerWriter w({path, FsyncPolicy::kNever, 1.0, 1024});
  ASSERT_TRUE(w.open().ok());
  std::string expected;
  std::set<const Observation*> blocks;  // every distinct observation taken
  std::size_t reused = 0;
  for (int i = 0; i < 20; ++i) {
    if (i == 10) {
      // Half way, until the writer has given one back (it does after writing a batch).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (w.observations_kept() == 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polls for the outcome
      }
      ASSERT_GT(w.observations_kept(), 0u) << "no written observation came back";
    }
    auto o = w.take_observation();
    if (!blocks.insert(o.get()).second) {
      ++reused;
      EXPECT_GE(o->observation_id.capacity(), 40u) << "the id's buffer was not kept";
      EXPECT_GE(o->path.capacity(), 50u) << "the path's buffer was not kept";
      EXPECT_GE(o->itl_ms.capacity(), 3u) << "the gaps' buffer was not kept";
    }
    ASSERT_EQ(render_observation(*o), render_observation(Observation{})) << i;
    o->observation_id = fmt::format("an-id-longer-than-a-short-string-holds-{}", i);
    o->path = "/v1/chat/completions?with=a-query-past-sixteen-bytes";
    o->model = "a-model-name-past-sixteen-bytes";
    o->response_id = "chatcmpl-a-response-id";
    o->itl_ms = {1.5, 2.5, 3.5};
    o->itl_full = true;
    o->prompt_tokens = i;
    o->outcome = "http_error";
    o->server_timings = R"({"prompt_n":12,"predicted_n":3})";
    expected += render_observation(*o);
    ASSERT_TRUE(w.submit(std::move(o)));
    EXPECT_FALSE(o);
  }
  EXPECT_GT(reused, 0u);
  w.close();
  EXPECT_EQ(slurp(path), expected);
  // Every block taken is kept once its line is written, and only once.
  EXPECT_EQ(w.observations_kept(), blocks.size());
  auto back = w.take_observation();
  EXPECT_TRUE(blocks.count(back.get()));
  EXPECT_EQ(render_observation(*back), render_observation(Observation{}));
  EXPECT_GE(back->observation_id.capacity(), 40u) << "the id's buffer was not kept";
  EXPECT_EQ(w.observations_kept(), blocks.size() - 1);
}

TEST(ClearForReuse, AnObservationFilledThroughoutIsANewOnesAgain) {
  Observation o;
  o.observation_id = "an-id-longer-than-a-short-string-holds";
  o.started_at_us = o.ended_at_us = 1'767'225'600'000'000;
  o.proxy_instance = "a-host-name-past-sixteen-bytes:1234";
  o.backend = "http://127.0.0.1:45675";
  o.method = "POST";
  o.path = "/v1/chat/completions";
  o.operation = "chat";
  o.model = o.response_model = o.response_id = o.upstream_request_id = "x";
  o.trace_id = std::array<std::uint8_t, 16>{1};
  o.span_id = std::array<std::uint8_t, 8>{2};
  o.session_id = o.session_source = "s";
  o.turn = 3;
  o.stream = o.usage_requested = o.usage_injected = true;
  o.max_tokens = 64;
  o.http_status = 500;
  o.outcome = "http_error";
  o.error_type = o.error_message = o.finish_reason = "e";
  o.choices = 2;
  o.ttfb_ms = o.ttft_ms = o.e2e_ms = 4.5;
  o.content_events = 3;
  o.itl_ms = {1, 2};
  o.itl_full = true;
  o.prompt_tokens = o.completion_tokens = o.total_tokens = o.cached_prompt_tokens = o.reasoning_tokens = 7;
  o.token_source = "usage";
  o.request_bytes = o.response_bytes = 9;
  o.in_flight_at_start = 4;
  o.upstream_retries = 1;
  o.timing_basis = "kernel_rx";
  o.proxy_lag_ms = o.proxy_lag_at_ms = o.proxy_lag_quiet_ms = 1.25;
  o.server_timings = "{}";
  o.scheduled_at_us = 5;
  o.send_lateness_ms = 0.5;
  o.sweep_point = "c4";
  o.warmup = true;
  const std::string filled = render_observation(o);
  const char* id_buffer = o.observation_id.data();
  clear_for_reuse(o);
  EXPECT_NE(render_observation(o), filled);
  EXPECT_EQ(render_observation(o), render_observation(Observation{}));
  EXPECT_TRUE(o.itl_ms.empty());
  EXPECT_FALSE(o.itl_full);
  EXPECT_EQ(o.observation_id.data(), id_buffer) << "the id's buffer was not kept";
}

TEST(LedgerWriter, LinesAcrossBurstsNapsAndSleepsAreAllWrittenInOrder) {
  // Bursts (the writer naps between batches and is not woken) alternate with quiet spells (it
  // goes to sleep and the next line must wake it); every line lands once, in order, before close.
  const std::string path = temp_dir() + "/bursts.jsonl";
  LedgerWriter::Options opts{path, FsyncPolicy::kNever, 1.0, 65536};
  opts.batch_window = std::chrono::milliseconds(2);
  LedgerWriter w(opts);
  ASSERT_TRUE(w.open().ok());
  int n = 0;
  for (int burst = 0; burst < 20; ++burst) {
    for (int i = 0; i < 1 + burst * 50; ++i) ASSERT_TRUE(w.submit("{\"n\":" + std::to_string(n++) + "}\n"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (w.lines_written() < static_cast<std::uint64_t>(n) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polls for the outcome
    }
    ASSERT_EQ(w.lines_written(), static_cast<std::uint64_t>(n)) << "burst " << burst << " was not written before close";
    // Every other spell outlasts the writer's batch window, so it is asleep when the next burst comes.
    if (burst % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  w.close();
  const std::string text = slurp(path);
  std::size_t pos = 0;
  for (int i = 0; i < n; ++i) {
    const std::string want = "{\"n\":" + std::to_string(i) + "}\n";
    ASSERT_EQ(text.compare(pos, want.size(), want), 0) << "line " << i;
    pos += want.size();
  }
  EXPECT_EQ(pos, text.size());
}

TEST(LedgerWriter, ANappingWriterIsWokenOnceAFullBatchWaitsAndNotBefore) {
  // After a batch the writer naps (100 ms by default; 30 s here), unless batch_lines lines wait:
  // a very busy proxy's lines are written every batch_lines, not a window's worth at a time.
  const std::string path = temp_dir() + "/full-batch.jsonl";
  LedgerWriter::Options opts{path, FsyncPolicy::kNever, 1.0, 65536};
  opts.batch_window = std::chrono::seconds(30);
  opts.batch_lines = 8;
  LedgerWriter w(opts);
  ASSERT_TRUE(w.open().ok());
  const auto written_within = [&w](std::uint64_t n, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (w.lines_written() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polls for the outcome
    }
    return w.lines_written();
  };
  ASSERT_TRUE(w.submit("{\"n\":0}\n"));  // wakes the sleeping writer, which then naps
  ASSERT_EQ(written_within(1, std::chrono::seconds(10)), 1u);
  for (int i = 1; i < 8; ++i) ASSERT_TRUE(w.submit("{\"n\":" + std::to_string(i) + "}\n"));
  // Seven waiting lines do not end the nap (a wait for something that must not happen: the nap
  // has 30 s to run).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(w.lines_written(), 1u);
  ASSERT_TRUE(w.submit("{\"n\":8}\n"));  // the eighth does
  EXPECT_EQ(written_within(9, std::chrono::seconds(10)), 9u);
  const auto stop_started = std::chrono::steady_clock::now();
  w.close();  // napping again: close wakes it
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started, std::chrono::seconds(10));
  const std::string text = slurp(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 9);
}

TEST(LedgerWriter, AStalledDiskDropsAndCountsThenAGapLineFollowsWhenWritingResumes) {
  // A FIFO nobody reads stands in for a stalled disk: the writer blocks once the pipe is full.
  const std::string path = temp_dir() + "/stalled.jsonl";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const int reader = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  LedgerWriter w({path, FsyncPolicy::kNever, 1.0, 4});
  ASSERT_TRUE(w.open().ok());
  const std::string line = std::string(1023, 'x') + "\n";
  int accepted = 0;
  for (int i = 0; i < 400; ++i) accepted += w.submit(line) ? 1 : 0;
  EXPECT_GT(w.lines_dropped(), 0u);  // the caller was never blocked: lines were dropped and counted
  const std::uint64_t dropped = w.lines_dropped();
  // The disk "resumes": read everything, then submit one more line to carry the gap record.
  std::string seen;
  std::thread drain([&] {
    fcntl(reader, F_SETFL, 0);
    char buf[65536];
    for (ssize_t n; (n = ::read(reader, buf, sizeof buf)) > 0;) seen.append(buf, static_cast<std::size_t>(n));
  });
  while (w.lines_written() < static_cast<std::uint64_t>(accepted)) std::this_thread::yield();
  ASSERT_TRUE(w.submit("{\"after\":1}\n"));
  w.close();
  drain.join();
  ::close(reader);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 'x'), static_cast<long>(accepted) * 1023);
  // Every dropped line is accounted for by the gap lines (one or more, as writing resumed).
  const std::string gap = "{\"schema\":\"modelperfobs.ledger-gap.v1\"";
  const std::string key = "\"dropped_lines\":";
  std::uint64_t in_gaps = 0;
  int gaps = 0;
  for (auto at = seen.find(gap); at != std::string::npos; at = seen.find(gap, at + 1)) {
    in_gaps += std::stoull(seen.substr(seen.find(key, at) + key.size()));
    ++gaps;
  }
  EXPECT_GE(gaps, 1);
  EXPECT_EQ(in_gaps, w.lines_dropped());
  EXPECT_GE(w.lines_dropped(), dropped);
  EXPECT_NE(seen.find("{\"after\":1}"), std::string::npos);
}

// A disk that fills up: the process may not grow a file past `bytes` (RLIMIT_FSIZE; writes past it
// fail with EFBIG, the way a full disk takes part of a write and refuses the rest). Restored after.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    set(bytes);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  void set(rlim_t bytes) {
    rlimit r = saved_;
    r.rlim_cur = std::min(bytes, saved_.rlim_max);
    setrlimit(RLIMIT_FSIZE, &r);
  }
  void lift() { setrlimit(RLIMIT_FSIZE, &saved_); }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = SIG_DFL;
};

template <typename Pred>
bool wait_for(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!pred() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  return pred();
}

std::string line_of(char c) { return std::string(999, c) + "\n"; }

TEST(LedgerWriter, AFullDiskThatTookPartOfALineLeavesNoFragmentAndTheRetryWritesItWhole) {
  const std::string path = temp_dir() + "/full.jsonl";
  LedgerWriter w({path, FsyncPolicy::kNever, 1.0, 64});
  ASSERT_TRUE(w.open().ok());
  FileSizeLimit limit(2500);  // room for two lines and half of the third
  for (char c : {'a', 'b', 'c'}) ASSERT_TRUE(w.submit(line_of(c)));
  ASSERT_TRUE(wait_for([&] { return w.write_errors() > 0; }));
  limit.lift();  // space freed: the retry must write the third line once, whole
  ASSERT_TRUE(wait_for([&] { return w.lines_written() == 3; }));
  w.close();
  EXPECT_EQ(slurp(path), line_of('a') + line_of('b') + line_of('c'));
  EXPECT_EQ(w.lines_lost(), 0u);
}

TEST(LedgerWriter, StoppingWhileTheDiskRefusesCountsTheLostLinesAndKeepsOnlyWholeOnes) {
  const std::string path = temp_dir() + "/full.jsonl";
  LedgerWriter w({path, FsyncPolicy::kNever, 1.0, 64});
  ASSERT_TRUE(w.open().ok());
  FileSizeLimit limit(2500);
  for (char c : {'a', 'b', 'c', 'd'}) ASSERT_TRUE(w.submit(line_of(c)));
  ASSERT_TRUE(wait_for([&] { return w.write_errors() > 0; }));
  w.close();
  limit.lift();
  EXPECT_EQ(slurp(path), line_of('a') + line_of('b'));  // no half of 'c'
  EXPECT_EQ(w.lines_written(), 2u);
  EXPECT_EQ(w.lines_lost(), 2u);
  EXPECT_EQ(w.last_write_errno(), EFBIG);
}

TEST(LedgerWriter, UnwritablePathIsAClearErrorAtOpen) {
  LedgerWriter w({"/proc/modelperfobs/ledger.jsonl", FsyncPolicy::kNever, 1.0, 8});
  auto st = w.open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("/proc/modelperfobs"), std::string::npos);
}

TEST(LedgerWriter, ReopenFollowsARotatedFile) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/l.jsonl";
  LedgerWriter w({path, FsyncPolicy::kAlways, 1.0, 64});
  ASSERT_TRUE(w.open().ok());
  w.submit("{\"a\":1}\n");
  while (w.lines_written() < 1) std::this_thread::yield();
  ASSERT_EQ(std::rename(path.c_str(), (dir + "/l.jsonl.1").c_str()), 0);
  w.request_reopen();
  w.submit("{\"b\":2}\n");
  w.close();
  EXPECT_EQ(slurp(dir + "/l.jsonl.1"), "{\"a\":1}\n");
  EXPECT_EQ(slurp(path), "{\"b\":2}\n");
}

TEST(FsyncPolicy, ParsesTheThreeNames) {
  EXPECT_EQ(*parse_fsync_policy("always"), FsyncPolicy::kAlways);
  EXPECT_FALSE(parse_fsync_policy("sometimes").ok());
}

}  // namespace
}  // namespace mpo::ledger
