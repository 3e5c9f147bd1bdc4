// The implementation of cli/sweep_workload.hpp: the requests a sweep sends, from its flags.
#include "cli/sweep_workload.hpp"

#include <fmt/format.h>

#include "cli/files.hpp"
#include "ledger/reader.hpp"
#include "loadgen/conversation.hpp"
#include "loadgen/trace.hpp"

namespace mpo::cli {
namespace {

Result<std::vector<loadgen::ServingRequest>> multi_turn_workload(const SweepArgs& a, std::string& source) {
  loadgen::MultiTurnOptions o;
  o.sessions = a.sessions;
  o.seed = a.seed;
  o.system_prompt_tokens = a.shared_prefix_tokens;
  o.tool_turn_share = a.tool_turns;
  o.require_tool_calls = a.require_tool_calls;
  for (auto [text, into] :
       {std::pair{&a.turns, &o.turns}, std::pair{&a.user_tokens, &o.user_tokens},
        std::pair{&a.output_tokens, &o.answer_tokens}, std::pair{&a.tool_result_tokens, &o.tool_result_tokens}}) {
    auto d = loadgen::parse_length_distribution(*text);
    if (!d) return d.error();
    *into = *d;
  }
  if (a.think_time_ms != "0") {
    auto d = loadgen::parse_length_distribution(a.think_time_ms);
    if (!d) return d.error();
    o.think_time_ms = *d;
  }
  auto requests = loadgen::multi_turn_workload(o);
  source = fmt::format(
      "multi-turn {}: turns={} user={} answer={} think_ms={} tool_turns={} tool_result={} system_prompt={} seed={}",
      loadgen::describe_sessions(requests), a.turns, a.user_tokens, a.output_tokens, a.think_time_ms, a.tool_turns,
      a.tool_result_tokens, a.shared_prefix_tokens, a.seed);
  if (a.require_tool_calls) source += ", each call before a tool turn required (tool_choice)";
  return requests;
}

Result<std::vector<loadgen::ServingRequest>> trace_workload(const SweepArgs& a, std::string& source) {
  const std::string& file = a.workload[1];
  const auto text = read_text_file(file);
  if (!text) return make_error(errc::kSweepDataset, "cannot read the trace " + file);
  loadgen::TraceOptions o;
  o.block_tokens = a.trace_block_tokens;
  o.seed = a.seed;
  auto trace = loadgen::parse_mooncake_trace(*text, o);
  if (!trace) return make_error(trace.error(), file + ": " + trace.error().message);
  source =
      fmt::format("trace {} ({} requests, {} blocks of {} tokens, {} of {} block uses shared)", file,
                  trace->requests.size(), trace->blocks, a.trace_block_tokens, trace->shared_blocks, trace->block_uses);
  return std::move(trace->requests);
}

}  // namespace

std::string workload_kind(const SweepArgs& a) { return a.workload.empty() ? "synthetic" : a.workload[0]; }

// Requests replayed at their recorded times (--replay-speeds): a ledger's, or a trace's.
bool recorded_workload(const SweepArgs& a) { return !a.replay.empty() || workload_kind(a) == "trace"; }

Result<std::vector<loadgen::ServingRequest>> build_workload(const SweepArgs& a, std::string& source) {
  if (workload_kind(a) == "multi-turn") return multi_turn_workload(a, source);
  if (workload_kind(a) == "trace") return trace_workload(a, source);
  if (!a.replay.empty()) {
    ledger::FileReadOptions fo;
    auto read = ledger::read_ledger_file(a.replay, fo);
    if (!read) return read.error();
    auto replay = loadgen::replay_ledger(std::move(read->records), a.seed);
    if (replay.requests.empty()) {
      return make_error(errc::kSweepReplay,
                        fmt::format("{} holds no request with prompt and completion token counts to replay", a.replay));
    }
    source = fmt::format("replay {} ({} requests, {} skipped without token counts)", a.replay, replay.requests.size(),
                         replay.skipped);
    return std::move(replay.requests);
  }
  if (!a.dataset.empty()) {
    const auto text = read_text_file(a.dataset);
    if (!text) return make_error(errc::kSweepDataset, "cannot read " + a.dataset);
    std::string format = a.dataset_format;
    if (format == "auto") format = text->find("\"conversations\"") != std::string::npos ? "sharegpt" : "web-tasks";
    source = fmt::format("{} {}", format, a.dataset);
    if (format == "sharegpt") {
      loadgen::ShareGptOptions o;
      o.max_output_tokens = a.max_output_tokens;
      return parse_sharegpt(*text, o);
    }
    if (format != "web-tasks")
      return make_error(errc::kSweepDataset, "--dataset-format is auto, sharegpt or web-tasks");
    loadgen::WebTaskOptions o;
    o.max_output_tokens = a.max_output_tokens;
    return parse_web_tasks(*text, o);
  }
  loadgen::SyntheticOptions o;
  o.count = a.requests;
  auto in = loadgen::parse_length_distribution(a.input_tokens);
  if (!in) return in.error();
  auto out = loadgen::parse_length_distribution(a.output_tokens);
  if (!out) return out.error();
  o.input = *in;
  o.output = *out;
  o.shared_prefix_tokens = a.shared_prefix_tokens;
  o.seed = a.seed;
  source = fmt::format("synthetic input={} output={} shared_prefix={} seed={}", a.input_tokens, a.output_tokens,
                       a.shared_prefix_tokens, a.seed);
  return synthetic_workload(o);
}

std::optional<std::string> workload_flag_problem(const SweepArgs& a) {
  const std::string kind = workload_kind(a);
  if (kind != "synthetic" && kind != "multi-turn" && kind != "trace")
    return std::optional<std::string>("--workload is synthetic, multi-turn or trace FILE");
  if (kind == "trace" && a.workload.size() != 2)
    return std::optional<std::string>("--workload trace needs the trace file: --workload trace FILE.jsonl");
  if (kind != "trace" && a.workload.size() > 1)
    return std::optional<std::string>("--workload " + kind + " takes no file");
  if (kind != "synthetic" && (!a.dataset.empty() || !a.replay.empty()))
    return std::optional<std::string>("--workload " + kind +
                                      " is a workload of its own: leave out --dataset and --replay");
  if (kind == "multi-turn" && a.requests_given)
    return std::optional<std::string>("--workload multi-turn is counted in --sessions (and --turns), not --requests");
  if (!(a.tool_turns >= 0 && a.tool_turns <= 1))
    return std::optional<std::string>("--tool-turns is a share from 0 to 1");
  if (a.sessions < 1) return std::optional<std::string>("--sessions must be at least 1");
  if (a.require_tool_calls && (kind != "multi-turn" || a.tool_turns <= 0))
    return std::optional<std::string>(
        "--require-tool-calls asks for the calls a multi-turn workload's tool turns answer: it needs "
        "--workload multi-turn and --tool-turns above 0");
  if (a.require_tool_calls && a.api == "completions")
    return std::optional<std::string>(
        "--require-tool-calls: the completions API has no tools; use --api chat, "
        "responses or messages");
  if (a.chain_responses) {
    if (kind != "multi-turn" || a.api != "responses")
      return std::optional<std::string>(
          "--chain-responses continues conversations: it needs --workload multi-turn and --api responses");
    if (a.tool_turns > 0)
      return std::optional<std::string>(
          "--chain-responses with --tool-turns: a tool's result must answer a call the server holds, which a "
          "synthetic workload cannot know; leave one out");
  }
  return std::nullopt;
}

}  // namespace mpo::cli
