#include "sim/openai_api.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <tuple>

#include "core/json.hpp"
#include "support/fixtures.hpp"

namespace mpo::sim {
namespace {

namespace json = boost::json;

// Splits an SSE body into the JSON payloads of its data: lines ("[DONE]" kept as is).
std::vector<std::string> events(const std::string& sse) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const auto end = sse.find("\n\n", pos);
    out.push_back(sse.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

Emission em(int index, std::string text, std::optional<FinishReason> fin = {}) {
  Emission e;
  e.index = index;
  e.text = std::move(text);
  e.finish = fin;
  return e;
}

// A request the engine finished: scheduled at 1 s, its first and last tokens then, its counts.
FinishedRequest finished(double first_token_s, double last_token_s, int prompt, int cached, int completion) {
  FinishedRequest f;
  f.scheduled_s = 1.0;
  f.first_token_s = first_token_s;
  f.last_token_s = last_token_s;
  f.prompt_tokens = prompt;
  f.cached_prompt_tokens = cached;
  f.completion_tokens = completion;
  return f;
}

TEST(ParseRequest, ReadsTheFieldsVllmHonours) {
  auto r = parse_completion_request(
      R"({"model":"m","messages":[{"role":"user","content":"Hi there"}],"stream":true,
          "stream_options":{"include_usage":true,"continuous_usage_stats":true},
          "max_completion_tokens":7,"ignore_eos":true,"stop":["x","y"],"seed":3})",
      Endpoint::kChat);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->stream && r->include_usage && r->continuous_usage && r->ignore_eos);
  EXPECT_EQ(r->max_tokens, 7);
  EXPECT_EQ(r->stop.size(), 2u);
  EXPECT_EQ(r->seed, 3u);
  EXPECT_EQ(r->prompt.size(), 3u + 1 + 3 + 3);  // "Hi" "ther" "e"
}

TEST(ParseRequest, CompletionsAcceptStringsAndTokenIds) {
  EXPECT_EQ(parse_completion_request(R"({"prompt":"Hi"})", Endpoint::kCompletions)->prompt.size(), 1u);
  EXPECT_EQ(parse_completion_request(R"({"prompt":[1,2,3]})", Endpoint::kCompletions)->prompt.size(), 3u);
}

TEST(ParseRequest, RejectsWhatVllmRejectsNamingTheParam) {
  struct Case {
    const char* body;
    Endpoint ep;
    const char* param;
  };
  for (const Case& c :
       {Case{"{", Endpoint::kChat, ""}, Case{"[]", Endpoint::kChat, ""},
        Case{R"({"model":"m"})", Endpoint::kChat, "messages"}, Case{R"({"messages":[]})", Endpoint::kChat, "messages"},
        Case{R"({"messages":[{"content":"x"}]})", Endpoint::kChat, "messages"},
        Case{R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})", Endpoint::kChat, "max_tokens"},
        Case{R"({"messages":[{"role":"user","content":"x"}],"stream_options":{}})", Endpoint::kChat, "stream_options"},
        Case{R"({"messages":[{"role":"user","content":"x"}],"tool_choice":"required"})", Endpoint::kChat,
             "tool_choice"},
        Case{R"({"messages":[{"role":"user","content":"x"}],"n":0})", Endpoint::kChat, "n"},
        Case{R"({"messages":[{"role":"user","content":"x"}],"n":129})", Endpoint::kChat, "n"},
        Case{R"({"messages":[{"role":"user","content":"x"}],"n":"2"})", Endpoint::kChat, "n"},
        Case{R"({"input":"x","n":2})", Endpoint::kResponses, "n"},
        Case{R"({"prompt":["a","b"]})", Endpoint::kCompletions, "prompt"},
        Case{R"({"prompt":{}})", Endpoint::kCompletions, "prompt"}, Case{R"({})", Endpoint::kCompletions, "prompt"}}) {
    auto r = parse_completion_request(c.body, c.ep);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.error().code, "sim.request") << c.body;
    EXPECT_EQ(r.error().subject, c.param) << c.body;
  }
}

TEST(ResponseBuilder, ChatStreamHasRoleChunkTokenChunksFinishUsageAndDone) {
  auto req = *parse_completion_request(
      R"({"messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}})",
      Endpoint::kChat);
  ResponseBuilder b(req, {"chatcmpl-1", 100, "m", 0}, 8);
  std::string sse = b.stream_start();
  sse += b.stream_tokens(std::vector{em(0, " a")});
  sse += b.stream_tokens(std::vector{em(1, " b", FinishReason::kLength)});
  sse += b.stream_end(0);
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 5u);
  auto first = json::parse(ev[0]).as_object();
  EXPECT_EQ(first["choices"].as_array()[0].as_object()["delta"].as_object()["role"], "assistant");
  auto last_tok = json::parse(ev[2]).as_object()["choices"].as_array()[0].as_object();
  EXPECT_EQ(last_tok["delta"].as_object()["content"], " b");
  EXPECT_EQ(last_tok["finish_reason"], "length");
  auto usage = json::parse(ev[3]).as_object();
  EXPECT_TRUE(usage["choices"].as_array().empty());
  EXPECT_EQ(usage["usage"].as_object()["completion_tokens"], 2);
  EXPECT_EQ(usage["usage"].as_object()["total_tokens"], 10);
  EXPECT_EQ(ev[4], "[DONE]");
}

// `simulate --imitate llamacpp`: llama.cpp b10309's chunks (its captures, and the real server asked
// without stream_options): members in its order with its system_fingerprint, the role chunk's null
// content, the finish in a chunk of its own; chat's `timings` on that finish chunk, or with usage
// asked for on a `"choices":[]` chunk after it with the usage; completions' usage (asked for or not)
// and timings on its finish chunk; then [DONE] alone. The proxy's tap reads prompt_n + cache_n from
// the timings when there is no usage.
TEST(ResponseBuilder, ALlamaCppStreamEndsEachChoiceAsB10309Does) {
  const FinishedRequest f = finished(1.0125, 1.0331, 10, 4, 3);
  const auto t = json::parse(llamacpp_timings(f)).as_object();
  EXPECT_EQ(t.at("cache_n"), 4);
  EXPECT_EQ(t.at("prompt_n"), 6);
  EXPECT_DOUBLE_EQ(t.at("prompt_ms").to_number<double>(), 12.5);
  EXPECT_DOUBLE_EQ(t.at("predicted_ms").to_number<double>(), 20.6);
  EXPECT_EQ(t.at("predicted_n"), 3);
  EXPECT_NEAR(t.at("prompt_per_second").to_number<double>(), 480, 1e-9);
  for (const char* key : {"prompt_per_token_ms", "predicted_per_token_ms", "predicted_per_second"}) {
    EXPECT_TRUE(t.contains(key)) << key;
  }
  ResponseBuilder::Options llama{"chatcmpl-1", 100, "m", 0, 0, true};
  for (const bool usage : {true, false}) {
    auto req = *parse_completion_request(
        usage ? R"({"messages":[{"role":"user","content":"Hi"}],"stream":true,"stream_options":{"include_usage":true}})"
              : R"({"messages":[{"role":"user","content":"Hi"}],"stream":true})",
        Endpoint::kChat);
    ResponseBuilder b(req, llama, 10);
    const std::string role = b.stream_start();
    EXPECT_EQ(
        role.rfind(
            R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],)", 0),
        0u)
        << role;
    const auto token = json::parse(events(b.stream_tokens(std::vector{em(0, " a", FinishReason::kLength)}))[0]);
    EXPECT_TRUE(token.at("choices").at(0).at("finish_reason").is_null());  // the finish comes apart
    EXPECT_EQ(token.at("system_fingerprint"), "b10309-82bb485");
    EXPECT_FALSE(token.at("choices").at(0).as_object().contains("logprobs"));
    b.set_timings(llamacpp_timings(f));
    const auto ev = events(b.choice_end(4));
    ASSERT_EQ(ev.size(), usage ? 2u : 1u);
    const auto finish = json::parse(ev[0]).as_object();
    EXPECT_EQ(finish.at("choices").at(0).at("finish_reason"), "length");
    EXPECT_TRUE(finish.at("choices").at(0).at("delta").as_object().empty());
    EXPECT_EQ(finish.contains("timings"), !usage);
    if (usage) {
      const auto last = json::parse(ev[1]).as_object();
      EXPECT_TRUE(last.at("choices").as_array().empty());
      EXPECT_EQ(last.at("usage").at("completion_tokens"), 1);
      EXPECT_EQ(last.at("usage").at("prompt_tokens_details").at("cached_tokens"), 4);
      EXPECT_EQ(last.at("timings").at("prompt_n"), 6);
    }
    EXPECT_EQ(events(b.stream_end(4)), std::vector<std::string>{"[DONE]"});
  }
  auto completion = *parse_completion_request(R"({"prompt":"Hi","stream":true})", Endpoint::kCompletions);
  ResponseBuilder c(completion, llama, 10);
  EXPECT_EQ(c.stream_start(), "");
  c.stream_tokens(std::vector{em(0, " a"), em(1, " b", FinishReason::kStop)});
  c.set_timings(llamacpp_timings(f));
  const std::string end = c.choice_end(4);
  // The usage before the id, the timings after it, as b10309 writes them.
  EXPECT_NE(
      end.find(R"("object":"text_completion","usage":{"completion_tokens":2,"prompt_tokens":10,"total_tokens":12,)"
               R"("prompt_tokens_details":{"cached_tokens":4}},"id":"chatcmpl-1","timings":{)"),
      std::string::npos)
      << end;
  EXPECT_EQ(json::parse(events(end)[0]).at("choices").at(0).at("text"), "");
  EXPECT_EQ(json::parse(events(end)[0]).at("choices").at(0).at("finish_reason"), "stop");
}

// Where two JSON values differ in shape (members and their order, arrays' lengths, kinds of
// value; every number one kind), as a path; "" when they agree.
std::string shape_difference(const json::value& ours, const json::value& theirs, const std::string& at = "$") {
  const auto kind = [](const json::value& v) { return v.is_number() ? json::kind::double_ : v.kind(); };
  if (kind(ours) != kind(theirs)) return at + ": kinds differ";
  if (ours.is_object()) {
    const auto &a = ours.as_object(), &b = theirs.as_object();
    if (a.size() != b.size()) return at + ": " + json::serialize(ours) + " vs " + json::serialize(theirs);
    for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j) {
      if (i->key() != j->key()) return at + ": member " + std::string(i->key()) + " where " + std::string(j->key());
      if (auto d = shape_difference(i->value(), j->value(), at + "." + std::string(i->key())); !d.empty()) return d;
    }
  }
  if (ours.is_array()) {
    const auto &a = ours.as_array(), &b = theirs.as_array();
    if (a.size() != b.size()) return at + ": lengths differ";
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (auto d = shape_difference(a[i], b[i], at + "[" + std::to_string(i) + "]"); !d.empty()) return d;
    }
  }
  return "";
}

// Not streamed, llama.cpp b10309 answers chat and completions with bodies of its own member order,
// its `timings`, and a usage that counts the first choice alone (its captures: three choices of 2, 1
// and 1 tokens, usage 2). The simulator's bodies have the captures' shape member for member.
TEST(ResponseBuilder, ALlamaCppBodyIsShapedAsB10309sAndCountsItsFirstChoiceOnly) {
  const FinishedRequest f = finished(1.01, 1.02, 11, 0, 2);
  ResponseBuilder::Options llama{"chatcmpl-1", 100, "small-random", 0, 0, true};
  const auto body_of = [&](Endpoint endpoint, const char* request, int n) {
    const auto req = *parse_completion_request(request, endpoint);
    std::vector<ResponseBuilder> builders;
    for (int i = 0; i < n; ++i) {
      llama.choice = i;
      builders.emplace_back(req, llama, 11);
      if (i == 0) {
        builders.back().stream_tokens(std::vector{em(0, " a"), em(1, " b", FinishReason::kStop)});
      } else {
        builders.back().stream_tokens(std::vector{em(0, " a", FinishReason::kStop)});
      }
    }
    std::vector<const ResponseBuilder*> others;
    for (int i = 1; i < n; ++i) others.push_back(&builders[i]);
    builders[0].set_timings(llamacpp_timings(f));
    return json::parse(builders[0].full_body(0, others));
  };
  const auto chat = body_of(Endpoint::kChat, R"({"messages":[{"role":"user","content":"Hi"}],"n":3})", 3);
  const auto real_chat = json::parse(test::capture_body("llamacpp/llamacpp_b10309_chat_nostream_n3.http"));
  EXPECT_EQ(shape_difference(chat, real_chat), "") << json::serialize(chat);
  EXPECT_EQ(chat.at("usage").at("completion_tokens"), 2);  // the first choice's, as the engine's
  EXPECT_EQ(real_chat.at("usage").at("completion_tokens"), 2);
  EXPECT_EQ(chat.at("timings").at("predicted_n"), 2);
  EXPECT_EQ(chat.at("choices").at(1).at("message").at("content"), " a");
  const auto completion = body_of(Endpoint::kCompletions, R"({"prompt":"Hi","n":2})", 2);
  const auto real_completion = json::parse(test::capture_body("llamacpp/llamacpp_b10309_completions_nostream_n2.http"));
  EXPECT_EQ(shape_difference(completion, real_completion), "") << json::serialize(completion);
  EXPECT_EQ(completion.at("object"), "text_completion");
  EXPECT_EQ(response_id_prefix(Endpoint::kCompletions, true), "chatcmpl-");  // as b10309's ids
  EXPECT_EQ(response_id_prefix(Endpoint::kMessages, true), "chatcmpl-");
  EXPECT_EQ(response_id_prefix(Endpoint::kCompletions), "cmpl-");
}

// A forced tool call with `--imitate llamacpp`, against b10309's captures (the template and request
// in tests/fixtures/SOURCES.md): nothing while the tokens before the function's name come (13 for
// get_weather), then the call's head with a 32-character id, each later piece alone, the finish and
// the usage in chunks of their own; the body's call as b10309 orders it. Every event and the body
// have their capture's shape, member for member.
TEST(ResponseBuilder, ALlamaCppToolCallIsHeldBackUntilItsNameAndShapedAsB10309s) {
  const char* request =
      R"({"messages":[{"role":"user","content":"weather in Paris?"}],"stream":true,)"
      R"("stream_options":{"include_usage":true},"tool_choice":"required","tools":[{"type":"function",)"
      R"("function":{"name":"get_weather","parameters":{"type":"object","properties":{}}}}]})";
  const auto req = *parse_completion_request(request, Endpoint::kChat);
  const ResponseBuilder::Options llama{"chatcmpl-01a24cec-74f8-711c-9c7f-50b4747fc6cf", 100, "real-llama", 0, 0, true};
  ResponseBuilder b(req, llama, 156);
  std::vector<std::string> sent;  // the events, one a token
  int quiet = 0;
  for (int i = 0; i < 20; ++i) {
    const auto ev =
        events(b.stream_tokens(std::vector{em(i, " x", i == 19 ? std::optional(FinishReason::kStop) : std::nullopt)}));
    if (ev.empty() && sent.empty()) ++quiet;
    for (const auto& e : ev) sent.push_back(e);
  }
  EXPECT_EQ(quiet, 13);  // the tokens of `{"name": "get_weather", "parameters": ` in LLaMA-2's vocabulary
  ASSERT_EQ(sent.size(), 7u);
  b.set_timings(llamacpp_timings(finished(1.01, 1.2, 156, 155, 20)));
  for (const auto& e : events(b.choice_end(155))) sent.push_back(e);

  const std::string capture = test::capture_body("llamacpp/llamacpp_b10309_chat_stream_tool_call_usage.http");
  const auto real = events(capture);
  ASSERT_EQ(real.size(), 17u);  // role, 13 call events, finish, usage, [DONE]
  const auto head = json::parse(sent[0]);
  EXPECT_EQ(shape_difference(head, json::parse(real[1])), "") << sent[0];
  const auto call = head.at("choices").at(0).at("delta").at("tool_calls").at(0);
  EXPECT_EQ(call.at("function").at("name"), "get_weather");
  EXPECT_EQ(call.at("id").as_string().size(), 32u);
  EXPECT_EQ(shape_difference(json::parse(sent[1]), json::parse(real[2])), "") << sent[1];
  ASSERT_EQ(sent.size(), 9u);
  const auto finish = json::parse(sent[7]);
  EXPECT_EQ(shape_difference(finish, json::parse(real[14])), "") << sent[7];
  EXPECT_EQ(finish.at("choices").at(0).at("finish_reason"), "tool_calls");
  EXPECT_EQ(shape_difference(json::parse(sent[8]), json::parse(real[15])), "") << sent[8];

  std::string not_streamed = request;
  not_streamed.erase(not_streamed.find(R"("stream":true,"stream_options":{"include_usage":true},)"), 54);
  const auto whole = *parse_completion_request(not_streamed, Endpoint::kChat);
  ResponseBuilder body(whole, llama, 156);
  for (int i = 0; i < 20; ++i) {
    (void)body.stream_tokens(std::vector{em(i, " x", i == 19 ? std::optional(FinishReason::kStop) : std::nullopt)});
  }
  body.set_timings(llamacpp_timings(finished(1.01, 1.2, 156, 155, 20)));
  const auto ours = json::parse(body.full_body(155));
  const auto real_body = json::parse(test::capture_body("llamacpp/llamacpp_b10309_chat_nostream_tool_call.http"));
  EXPECT_EQ(shape_difference(ours, real_body), "") << json::serialize(ours);
  EXPECT_EQ(ours.at("choices").at(0).at("finish_reason"), "tool_calls");
}

// The same forced call on b10309's Responses API (captures llamacpp_b10309_responses_*tool_call*):
// nothing until the name, then the function_call item and one arguments delta a token, the item done,
// response.completed with the item in its output; the whole body's item in the same order. A call
// cut before its name streams no item at all (output []), and the body says its text as a message.
// In chat, such a cut call streams the finish chunk alone and the body its text as content.
TEST(ResponseBuilder, ALlamaCppResponsesToolCallIsHeldBackUntilItsNameAndShapedAsB10309s) {
  const std::string tools =
      R"("tool_choice":"required","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}])";
  const ResponseBuilder::Options llama{"resp_01a24cec74f8711c9c7f50b4747fc6cf", 100, "small", 0, 0, true};
  const auto run = [&](int tokens, bool stream, FinishReason finish) {
    const auto req = *parse_completion_request(
        fmt::format(R"({{"input":"weather in Paris?","stream":{},{}}})", stream ? "true" : "false", tools),
        Endpoint::kResponses);
    ResponseBuilder b(req, llama, 156);
    std::string sse = b.stream_start();
    std::vector<int> quiet_tokens;
    for (int i = 0; i < tokens; ++i) {
      const auto out =
          b.stream_tokens(std::vector{em(i, " x", i + 1 == tokens ? std::optional(finish) : std::nullopt)});
      if (out.empty()) quiet_tokens.push_back(i);
      sse += out;
    }
    b.set_timings(llamacpp_timings(finished(1.01, 1.2, 156, 155, tokens)));
    return std::tuple{stream ? events(sse + b.stream_end(155)) : std::vector<std::string>{b.full_body(155)},
                      quiet_tokens.size()};
  };
  const auto shapes_match = [](const std::vector<std::string>& ours, const std::vector<std::string>& real) {
    ASSERT_EQ(ours.size(), real.size());
    for (std::size_t i = 0; i < ours.size(); ++i) {
      if (real[i] == "[DONE]") {
        EXPECT_EQ(ours[i], real[i]);
        continue;
      }
      EXPECT_EQ(shape_difference(json::parse(ours[i]), json::parse(real[i])), "") << "event " << i << ": " << ours[i];
    }
  };
  const auto [sent, quiet] = run(20, true, FinishReason::kStop);
  EXPECT_EQ(quiet, 13u);  // as in chat: the tokens before the name
  const auto real = events(test::capture_body("llamacpp/llamacpp_b10309_responses_stream_tool_call.http"));
  ASSERT_EQ(real.size(), 17u);  // created, in_progress, added, 12 deltas, done, completed
  ASSERT_EQ(sent.size(), 12u);  // created, in_progress, added, 7 deltas, done, completed
  shapes_match({sent[0], sent[1], sent[2], sent[3], sent[4], sent[10], sent[11]},
               {real[0], real[1], real[2], real[3], real[4], real[15], real[16]});
  const auto added = json::parse(sent[2]).at("item");
  EXPECT_EQ(added.at("name"), "get_weather");
  EXPECT_EQ(added.at("call_id").as_string().size(), 37u);  // "call_" and 32 characters
  const auto done = json::parse(sent[10]).at("item");
  EXPECT_TRUE(json::parse(done.at("arguments").as_string()).is_object()) << done;
  EXPECT_EQ(json::parse(sent[11]).at("response").at("output").at(0), done);

  const auto [body, body_quiet] = run(20, false, FinishReason::kStop);
  shapes_match(body, {test::capture_body("llamacpp/llamacpp_b10309_responses_nostream_tool_call.http")});
  EXPECT_EQ(json::parse(body[0]).at("output").at(0).at("type"), "function_call");

  const auto [cut, cut_quiet] = run(12, true, FinishReason::kLength);
  EXPECT_EQ(cut_quiet, 12u);
  shapes_match(cut,
               events(test::capture_body("llamacpp/llamacpp_b10309_responses_stream_tool_call_cut_before_name.http")));
  EXPECT_TRUE(json::parse(cut[2]).at("response").at("output").as_array().empty());
  const auto [cut_body, cut_body_quiet] = run(12, false, FinishReason::kLength);
  shapes_match(cut_body,
               {test::capture_body("llamacpp/llamacpp_b10309_responses_nostream_tool_call_cut_before_name.http")});

  // Chat, cut before the name: the role, the finish alone (length), [DONE]; the body's text as content.
  const std::string chat_request =
      R"({"messages":[{"role":"user","content":"weather in Paris?"}],"stream":true,"tool_choice":"required",)"
      R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]})";
  for (bool stream : {true, false}) {
    std::string text = chat_request;
    if (!stream) text.erase(text.find(R"("stream":true,)"), 14);
    const auto req = *parse_completion_request(text, Endpoint::kChat);
    ResponseBuilder b(req, {"chatcmpl-01a24cec-74f8-711c-9c7f-50b4747fc6cf", 100, "small", 0, 0, true}, 156);
    std::string sse = b.stream_start();
    for (int i = 0; i < 12; ++i) {
      sse += b.stream_tokens(std::vector{em(i, " x", i == 11 ? std::optional(FinishReason::kLength) : std::nullopt)});
    }
    b.set_timings(llamacpp_timings(finished(1.01, 1.2, 156, 155, 12)));
    if (stream) {
      sse += b.choice_end(155) + b.stream_end(155);
      const auto theirs =
          events(test::capture_body("llamacpp/llamacpp_b10309_chat_stream_tool_call_cut_before_name.http"));
      shapes_match(events(sse), theirs);
    } else {
      const auto ours = b.full_body(155);
      shapes_match({ours},
                   {test::capture_body("llamacpp/llamacpp_b10309_chat_nostream_tool_call_cut_before_name.http")});
      EXPECT_TRUE(json::parse(ours).at("choices").at(0).at("message").at("content").is_string()) << ours;
    }
  }
}

// The reference's dialect (OpenAI's Responses API): the item opens with the first token, each piece
// of the arguments a delta with its output index, then function_call_arguments.done with the name
// and the whole arguments, and the item done.
TEST(ResponseBuilder, AResponsesToolCallInTheReferencesDialectOpensAtOnce) {
  const auto req = *parse_completion_request(
      R"({"input":"Hi","stream":true,"tool_choice":{"type":"function","name":"lookup"},"tools":[{"type":"function","name":"lookup"}]})",
      Endpoint::kResponses);
  ResponseBuilder b(req, {"resp_1", 100, "m", 0, 0, false}, 4);
  std::string sse = b.stream_start();
  for (int i = 0; i < 3; ++i) {
    sse += b.stream_tokens(std::vector{em(i, " x", i == 2 ? std::optional(FinishReason::kStop) : std::nullopt)});
  }
  sse += b.stream_end(0);
  std::vector<std::string> types;
  std::string arguments;
  for (const auto& e : events(sse)) {
    const auto o = json::parse(e).as_object();
    types.emplace_back(o.at("type").as_string());
    if (types.back() == "response.function_call_arguments.delta") arguments += o.at("delta").as_string();
    if (types.back() == "response.function_call_arguments.done") {
      EXPECT_EQ(o.at("name"), "lookup");
      EXPECT_EQ(o.at("arguments").as_string(), arguments);
      EXPECT_EQ(o.at("output_index"), 0);
    }
  }
  EXPECT_EQ(types, (std::vector<std::string>{
                       "response.created", "response.in_progress", "response.output_item.added",
                       "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                       "response.function_call_arguments.delta", "response.function_call_arguments.done",
                       "response.output_item.done", "response.completed"}));
  EXPECT_EQ(arguments, R"({"query": " x x x"})");
}

// A forced call on the Messages API (tool_choice {"type":"any"} or {"type":"tool","name":..}), in
// Anthropic's shape: a tool_use block opened with an empty input, input_json_delta pieces that join
// to the call's input, the block closed, stop_reason tool_use; the body's block carries the input as
// an object. With `--imitate llamacpp` the block comes only once the tokens before the function's
// name have (inferred from its chat and Responses captures: its Messages tool_use was not captured).
TEST(ResponseBuilder, AMessagesToolCallIsAToolUseBlockOfInputJsonDeltas) {
  for (bool llamacpp : {false, true}) {
    SCOPED_TRACE(llamacpp ? "llamacpp" : "reference");
    for (const char* choice : {R"({"type":"any"})", R"({"type":"tool","name":"lookup"})"}) {
      const auto req = *parse_completion_request(
          fmt::format(R"({{"messages":[{{"role":"user","content":"Hi"}}],"max_tokens":40,"stream":true,)"
                      R"("tool_choice":{},"tools":[{{"name":"lookup","input_schema":{{"type":"object"}}}}]}})",
                      choice),
          Endpoint::kMessages);
      ASSERT_EQ(req.tool_name, "lookup");
      ResponseBuilder b(req, {"msg_01a24cec74f8711c9c7f50b4747fc6cf", 100, "m", 0, 0, llamacpp}, 8);
      std::string sse = b.stream_start();
      int quiet = 0;
      for (int i = 0; i < 20; ++i) {
        const auto out =
            b.stream_tokens(std::vector{em(i, " x", i == 19 ? std::optional(FinishReason::kStop) : std::nullopt)});
        if (out.find("content_block") == std::string::npos) ++quiet;  // (message_start comes with the first)
        sse += out;
      }
      EXPECT_EQ(quiet, llamacpp ? 11 : 0);  // 9 + a third of "lookup"
      sse += b.stream_end(0);
      std::vector<std::string> types;
      std::string input;
      for (const auto& e : events(sse)) {
        const auto o = json::parse(e).as_object();
        types.emplace_back(o.at("type").as_string());
        if (types.back() == "content_block_start") {
          EXPECT_EQ(o.at("content_block").at("type"), "tool_use");
          EXPECT_EQ(o.at("content_block").at("name"), "lookup");
          EXPECT_TRUE(o.at("content_block").at("input").as_object().empty());
          EXPECT_EQ(std::string_view(o.at("content_block").at("id").as_string()).substr(0, 6), "toolu_");
        }
        if (types.back() == "content_block_delta") {
          EXPECT_EQ(o.at("delta").at("type"), "input_json_delta");
          input += o.at("delta").at("partial_json").as_string();
        }
        if (types.back() == "message_delta") {
          EXPECT_EQ(o.at("delta").at("stop_reason"), "tool_use");
        }
      }
      EXPECT_EQ(types.front(), "message_start");
      EXPECT_EQ(types.back(), "message_stop");
      EXPECT_EQ(std::count(types.begin(), types.end(), "content_block_start"), 1);
      EXPECT_EQ(std::count(types.begin(), types.end(), "content_block_delta"), llamacpp ? 9 : 20);
      std::string twenty;
      for (int i = 0; i < 20; ++i) twenty += " x";
      EXPECT_EQ(json::parse(input).at("query").as_string(), twenty);  // every token's text, the held-back ones too
      const auto body = json::parse(b.full_body(0));
      EXPECT_EQ(body.at("content").at(0).at("type"), "tool_use");
      EXPECT_EQ(body.at("content").at(0).at("input"), json::parse(input));
      EXPECT_EQ(body.at("stop_reason"), "tool_use");
    }
  }
}

// With `--imitate llamacpp` the Responses and Messages APIs answer in b10309's dialect: every event
// and body has its capture's shape, member for member (no sequence numbers, output indexes or ping;
// `response.completed` at the length limit, with the engine's `timings` beside the response).
TEST(ResponseBuilder, LlamaCppsResponsesAndMessagesAreShapedAsItsCaptures) {
  const FinishedRequest f = finished(1.01, 1.02, 10, 0, 6);
  const ResponseBuilder::Options llama{"resp_1", 100, "real-llama", 0, 0, true};
  for (const auto& [endpoint, request, capture] :
       {std::tuple{Endpoint::kResponses, R"({"input":"Hi","max_output_tokens":6,"stream":true})", "responses"},
        std::tuple{Endpoint::kMessages, R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":6,"stream":true})",
                   "messages"}}) {
    const auto req = *parse_completion_request(request, endpoint);
    ResponseBuilder b(req, llama, 10);
    std::string sse = b.stream_start();
    for (int i = 0; i < 6; ++i) {
      sse += b.stream_tokens(
          std::vector{em(i, " a", i == 5 ? std::optional(FinishReason::kLength) : std::optional<FinishReason>())});
    }
    b.set_timings(llamacpp_timings(f));
    sse += b.stream_end(9);
    const auto ours = events(sse);
    const auto theirs = events(test::capture_body(fmt::format("llamacpp/llamacpp_b10309_{}_stream.http", capture)));
    ASSERT_EQ(ours.size(), theirs.size()) << sse;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      EXPECT_EQ(shape_difference(json::parse(ours[i]), json::parse(theirs[i])), "")
          << capture << " event " << i << ": " << ours[i];
    }
    const auto body = json::parse(b.full_body(9));
    const auto real_body =
        json::parse(test::capture_body(fmt::format("llamacpp/llamacpp_b10309_{}_nostream.http", capture)));
    EXPECT_EQ(shape_difference(body, real_body), "") << body;
  }
}

TEST(Tokenize, CountsWhatAChatRequestOfTheSameMessagesCounts) {
  const std::string messages = R"({"messages":[{"role":"user","content":"abcd efgh ijkl"}])";
  const auto chat = *parse_completion_request(messages + "}", Endpoint::kChat);
  const auto out = json::parse(*render_tokenize(messages + R"(,"add_generation_prompt":true})", 8192)).as_object();
  EXPECT_EQ(out.at("count").as_int64(), static_cast<std::int64_t>(chat.prompt.size()));
  EXPECT_EQ(out.at("tokens").as_array().size(), chat.prompt.size());
  EXPECT_EQ(out.at("max_model_len"), 8192);
  const auto plain = json::parse(*render_tokenize(R"({"prompt":"abcd efgh"})", 8192)).as_object();
  EXPECT_LT(plain.at("count").as_int64(), out.at("count").as_int64());  // no template
  EXPECT_FALSE(static_cast<bool>(render_tokenize("[1]", 8192)));
}

TEST(ResponseBuilder, ContinuousUsageIsCumulativeOnEveryChunk) {
  auto req = *parse_completion_request(
      R"({"prompt":"Hi","stream":true,"stream_options":{"continuous_usage_stats":true}})", Endpoint::kCompletions);
  ResponseBuilder b(req, {"cmpl-1", 100, "m", 0}, 1);
  std::string sse = b.stream_tokens(std::vector{em(0, " a")});
  sse += b.stream_tokens(std::vector{em(1, " b")});
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(json::parse(ev[0]).as_object()["usage"].as_object()["completion_tokens"], 1);
  EXPECT_EQ(json::parse(ev[1]).as_object()["usage"].as_object()["completion_tokens"], 2);
  EXPECT_EQ(json::parse(ev[1]).as_object()["choices"].as_array()[0].as_object()["text"], " b");
}

TEST(ResponseBuilder, ReasoningComesBeforeContent) {
  auto req =
      *parse_completion_request(R"({"messages":[{"role":"user","content":"Hi"}],"stream":true})", Endpoint::kChat);
  ResponseBuilder b(req, {"chatcmpl-1", 100, "m", 2}, 8);
  const auto ev = events(b.stream_tokens(std::vector{em(0, " a"), em(1, " b"), em(2, " c", FinishReason::kStop)}));
  ASSERT_EQ(ev.size(), 2u);  // one event per kind of delta
  EXPECT_EQ(
      json::parse(ev[0]).as_object()["choices"].as_array()[0].as_object()["delta"].as_object()["reasoning_content"],
      " a b");
  EXPECT_EQ(json::parse(ev[1]).as_object()["choices"].as_array()[0].as_object()["delta"].as_object()["content"], " c");
}

TEST(ResponseBuilder, RequiredToolChoiceStreamsOnlyToolCallsWithValidArguments) {
  auto req = *parse_completion_request(
      R"({"messages":[{"role":"user","content":"Hi"}],"stream":true,"tool_choice":"required",
          "tools":[{"type":"function","function":{"name":"search","parameters":{}}}]})",
      Endpoint::kChat);
  ResponseBuilder b(req, {"chatcmpl-9", 100, "m", 0}, 8);
  std::string sse = b.stream_tokens(std::vector{em(0, " a")});
  sse += b.stream_tokens(std::vector{em(1, " b", FinishReason::kStop)});
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 2u);
  std::string args;
  for (const auto& e : ev) {
    auto choice = json::parse(e).as_object()["choices"].as_array()[0].as_object();
    auto delta = choice["delta"].as_object();
    EXPECT_FALSE(delta.contains("content"));
    args += delta["tool_calls"].as_array()[0].as_object()["function"].as_object()["arguments"].as_string();
  }
  EXPECT_EQ(json::parse(ev[0])
                .as_object()["choices"]
                .as_array()[0]
                .as_object()["delta"]
                .as_object()["tool_calls"]
                .as_array()[0]
                .as_object()["function"]
                .as_object()["name"],
            "search");
  EXPECT_EQ(json::parse(args).as_object()["query"], " a b");
  EXPECT_EQ(json::parse(ev[1]).as_object()["choices"].as_array()[0].as_object()["finish_reason"], "tool_calls");
}

TEST(ResponseBuilder, NonStreamedBodyCarriesTextAndUsage) {
  auto req = *parse_completion_request(R"({"messages":[{"role":"user","content":"Hi"}]})", Endpoint::kChat);
  ResponseBuilder b(req, {"chatcmpl-1", 100, "m", 0}, 8);
  b.stream_tokens(std::vector{em(0, " a"), em(1, " b", FinishReason::kStop)});
  auto body = json::parse(b.full_body(4)).as_object();
  auto choice = body["choices"].as_array()[0].as_object();
  EXPECT_EQ(choice["message"].as_object()["content"], " a b");
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(body["usage"].as_object()["prompt_tokens_details"].as_object()["cached_tokens"], 4);
}

// A request for several choices, as vLLM answers one: each choice's chunks carry its index and its
// own finish; one usage at the end counts every choice's tokens and the prompt once; the whole
// body lists the choices in order under that usage.
TEST(ResponseBuilder, SeveralChoicesCarryTheirIndexAndOneUsageCountsThemAll) {
  auto req = *parse_completion_request(
      R"({"messages":[{"role":"user","content":"Hi"}],"n":2,"stream":true,"stream_options":{"include_usage":true}})",
      Endpoint::kChat);
  ASSERT_EQ(req.n, 2);
  ResponseBuilder first(req, {"chatcmpl-1", 100, "m", 0, 0}, 8);
  ResponseBuilder second(req, {"chatcmpl-1", 100, "m", 0, 1}, 8);
  std::string sse = first.stream_start() + second.stream_start();
  sse += first.stream_tokens(std::vector{em(0, " a")});
  sse += second.stream_tokens(std::vector{em(0, " x"), em(1, " y"), em(2, " z", FinishReason::kLength)});
  sse += first.stream_tokens(std::vector{em(1, " b", FinishReason::kStop)});
  first.count_other_choices(second.completion_tokens());
  sse += first.stream_end(3);
  const auto ev = events(sse);
  ASSERT_EQ(ev.size(), 7u);
  const auto index = [&](std::size_t i) {
    return json::parse(ev[i]).as_object()["choices"].as_array()[0].as_object()["index"].as_int64();
  };
  EXPECT_EQ(index(0), 0);
  EXPECT_EQ(index(1), 1);
  EXPECT_EQ(index(2), 0);
  EXPECT_EQ(index(3), 1);
  EXPECT_EQ(index(4), 0);
  EXPECT_EQ(json::parse(ev[3]).as_object()["choices"].as_array()[0].as_object()["finish_reason"], "length");
  EXPECT_EQ(json::parse(ev[4]).as_object()["choices"].as_array()[0].as_object()["finish_reason"], "stop");
  auto usage = json::parse(ev[5]).as_object()["usage"].as_object();
  EXPECT_EQ(usage["prompt_tokens"], 8);
  EXPECT_EQ(usage["completion_tokens"], 5);
  EXPECT_EQ(usage["total_tokens"], 13);
  EXPECT_EQ(usage["prompt_tokens_details"].as_object()["cached_tokens"], 3);
  EXPECT_EQ(ev[6], "[DONE]");

  auto whole = *parse_completion_request(R"({"prompt":"Hi","n":2})", Endpoint::kCompletions);
  ResponseBuilder a(whole, {"cmpl-1", 100, "m", 0, 0}, 4);
  ResponseBuilder b(whole, {"cmpl-1", 100, "m", 0, 1}, 4);
  a.stream_tokens(std::vector{em(0, " a", FinishReason::kStop)});
  b.stream_tokens(std::vector{em(0, " x"), em(1, " y", FinishReason::kLength)});
  const ResponseBuilder* others[] = {&b};
  auto body = json::parse(a.full_body(0, others)).as_object();
  auto choices = body["choices"].as_array();
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].as_object()["index"], 0);
  EXPECT_EQ(choices[0].as_object()["text"], " a");
  EXPECT_EQ(choices[1].as_object()["index"], 1);
  EXPECT_EQ(choices[1].as_object()["text"], " x y");
  EXPECT_EQ(choices[1].as_object()["finish_reason"], "length");
  EXPECT_EQ(body["usage"].as_object()["completion_tokens"], 3);
  EXPECT_EQ(body["usage"].as_object()["total_tokens"], 7);
}

TEST(RenderError, IsOpenAiShaped) {
  auto e = json::parse(render_error(404, "NotFoundError", "The model `x` does not exist.", "model")).as_object();
  EXPECT_EQ(e["error"].as_object()["code"], 404);
  EXPECT_EQ(e["error"].as_object()["param"], "model");
}

}  // namespace
}  // namespace mpo::sim
