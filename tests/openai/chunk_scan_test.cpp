// The DOM-free scan of streamed chunks (openai/chunk_scan.hpp, issue 43): it answers the usual chat
// and completions chunks, real ones from llama.cpp b10309 (tests/fixtures/llamacpp/, provenance in
// tests/fixtures/SOURCES.md) and the shapes vLLM writes, exactly as the full parse does, and leaves
// everything it is not sure of to the full parse. The invented inputs are edge cases.
#include "openai/chunk_scan.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/fixtures.hpp"

namespace mpo::openai {
namespace {

// Every `data: {...}` payload of a capture.
std::vector<std::string> payloads_of(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("data: {", 0) == 0) out.push_back(line.substr(6));
  }
  return out;
}

TEST(ChunkScan, AnswersEveryChunkOfARealLlamaCppStreamAsTheFullParseDoes) {
  const auto payloads = payloads_of(test::capture_body("llamacpp/llamacpp_b10309_chat_stream.http"));
  ASSERT_EQ(payloads.size(), 9u);  // and [DONE]
  int answered = 0;
  for (const auto& p : payloads) {
    const auto scanned = scan_chat_chunk(p);
    if (!scanned) {
      // Only the last, which carries llama.cpp's timings, is the full parse's.
      EXPECT_NE(p.find("\"timings\""), std::string::npos) << p;
      continue;
    }
    ++answered;
    EXPECT_EQ(*scanned, classify_chunk_fully(p)) << p;
  }
  EXPECT_GE(answered, 8);
  const auto first = scan_chat_chunk(payloads[0]);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, ChunkKind::kRoleOnly);
  EXPECT_EQ(first->model, "real-llama");
  EXPECT_EQ(first->id, "chatcmpl-U4J7vWTsJ4G6NTWJQfubkyfb20IN7U20");
  EXPECT_EQ(first->choices, 1);
  EXPECT_EQ(scan_chat_chunk(payloads[1])->kind, ChunkKind::kContent);
}

TEST(ChunkScan, AnswersTheUsualShapesAsTheFullParseDoes) {
  const char* cases[] = {
      R"({"id":"c","object":"chat.completion.chunk","created":1796088195,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null})",
      R"({"choices":[{"index":0,"delta":{"content":"a\"b\\n\u00e9\/"},"finish_reason":null}]})",
      R"({"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]})",
      R"({"choices":[{"index":0,"delta":{"reasoning":"think","content":null}}]})",
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]})",
      R"({"choices":[{"index":0,"delta":{"tool_calls":[]}}]})",
      R"({"choices":[{"index":0,"delta":{"refusal":"no"}}]})",
      R"({"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]})",
      R"({"choices":[{"index":0,"delta":"text"}]})",
      R"({"choices":[{"index":0,"message":{"content":"x"}}]})",
      R"({"choices":[{"index":0,"delta":{},"message":{"content":"x"}}]})",
      R"({"choices":[{"text":"","index":0,"finish_reason":"length"},{"text":"y"}],"object":"text_completion"})",
      R"({"choices":[],"id":"x"})",
      R"({"choices":null,"model":7})",
      R"({})",
      " \t\r\n{ \"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] , \"n\" : [ -0.5 , 0 , 123456789012345 , "
      "true , false , null , { } , [ ] ] } \n",
      R"({"choices":[{"delta":{"content":"caf)"
      "\xc3\xa9"
      R"( \ud7ff"}}]})",
  };
  for (const char* c : cases) {
    const auto scanned = scan_chat_chunk(c);
    ASSERT_TRUE(scanned) << c;
    EXPECT_EQ(*scanned, classify_chunk_fully(c)) << c;
    EXPECT_EQ(classify_chunk(c), classify_chunk_fully(c)) << c;
  }
  EXPECT_EQ(scan_chat_chunk(cases[4])->kind, ChunkKind::kToolCalls);
  EXPECT_EQ(scan_chat_chunk(cases[5])->kind, ChunkKind::kEmpty);
  EXPECT_EQ(scan_chat_chunk(cases[10])->kind, ChunkKind::kEmpty);  // the delta, not the message
  const auto two = scan_chat_chunk(cases[11]);
  EXPECT_EQ(two->choices, 2);
  EXPECT_EQ(two->kind, ChunkKind::kContent);
  EXPECT_EQ(two->finish_reason, "length");
}

TEST(ChunkScan, LeavesToTheFullParseWhatItIsNotSureOf) {
  const std::string cases[] = {
      // Members the full parse reads.
      R"({"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})",
      R"({"error":{"message":"m","type":"t"}})",
      R"({"type":"response.output_text.delta","delta":"x"})",
      R"({"choices":[{"delta":{"content":"x"}}],"timings":{"predicted_n":1}})",
      R"({"object":"error","message":"m","type":"BadRequestError"})",
      R"({"object":"response","status":"completed"})",
      // Given twice, escaped, or read differently by different parsers.
      R"({"choices":[{"delta":{"content":""},"delta":{"content":"x"}}]})",
      R"({"model":"a","model":"b"})",
      R"({"mod\u0065l":"a"})",
      R"({"model":"a\nb"})",
      R"({"n":1e3})",
      R"({"n":1234567890123456})",
      R"({"choices":[{"delta":{"content":"\ud83d\ude00"}}]})",
      R"({"choices":[{"delta":{"content":"\u0000"}}]})",
      R"({"choices":["x"]})",
      std::string(70, '[') + std::string(70, ']'),
      "{\"a\":" + std::string(70, '[') + std::string(70, ']') + "}",
      // Not JSON.
      R"({"choices":[],})",
      R"({"choices":[]})"
      "x",
      R"({"a":01})",
      R"({"a":1.})",
      R"({"a":-})",
      R"({"a":tru})",
      R"({"a":truex})",
      R"({"a":"\x"})",
      R"({"a":"\u12g4"})",
      "{\"a\":\"\x01\"}",
      "{\"a\":\"\xff\"}",
      "{\"a\":\"\xc3\"}",
      R"({"a":"unterminated)",
      R"({"a" 1})",
      R"([])",
      "",
      "[DONE]",
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(scan_chat_chunk(c)) << c;
    EXPECT_EQ(classify_chunk(c), classify_chunk_fully(c)) << c;
  }
  EXPECT_EQ(classify_chunk(R"({"choices":[],})").kind, ChunkKind::kUnparsable);
  EXPECT_EQ(classify_chunk(R"({"choices":[{"delta":{"content":""},"delta":{"content":"x"}}]})").kind,
            ChunkKind::kEmpty);  // the first of a key given twice, as a lookup by key finds
}

TEST(ChunkTemplate, ReadsEveryLaterChunkOfARealLlamaCppStreamAsTheFullParseDoes) {
  const auto payloads = payloads_of(test::capture_body("llamacpp/llamacpp_b10309_chat_stream.http"));
  ChunkTemplate t;
  ASSERT_TRUE(t.learn(payloads[1]));  // the first content chunk
  int read = 0;
  for (std::size_t i = 1; i < payloads.size(); ++i) {
    const PayloadInfo* known = t.read(payloads[i]);
    if (known == nullptr) continue;
    ++read;
    EXPECT_EQ(*known, classify_chunk_fully(payloads[i])) << payloads[i];
  }
  // Every content chunk (the role chunk, the finish chunk and the usage chunk differ elsewhere).
  EXPECT_GE(read, 5);
  EXPECT_EQ(t.read(payloads[0]), nullptr);
  EXPECT_EQ(t.read(payloads.back()), nullptr);
}

TEST(ChunkTemplate, ReadsOnlyAChunkThatIsItsBytesButForAValidContentString) {
  const std::string base =
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"first"},"logprobs":null,"finish_reason":null}]})";
  const auto with = [&base](std::string_view content) {
    std::string s = base;
    return s.replace(s.find("first"), 5, content);
  };
  ChunkTemplate t;
  ASSERT_TRUE(t.learn(base));
  for (const std::string& content :
       {std::string(), std::string("x"), std::string(R"(a \"quoted\" word)"), std::string(R"(\n\t\\ \u00e9 \/)"),
        std::string("caf\xc3\xa9"), std::string(300, 'y')}) {
    const std::string chunk = with(content);
    const PayloadInfo* known = t.read(chunk);
    ASSERT_NE(known, nullptr) << chunk;
    EXPECT_EQ(*known, classify_chunk_fully(chunk)) << chunk;
  }
  EXPECT_EQ(t.read(with(""))->kind, ChunkKind::kRoleOnly);  // the role decides when the content is empty
  EXPECT_EQ(t.read(with("x"))->kind, ChunkKind::kContent);
  // Not the template's bytes, or not one valid string between them: the full parse's.
  std::string other_id = base, stopped = base;
  other_id.replace(base.find("chatcmpl-1"), 10, "chatcmpl-2");
  stopped.replace(base.find("null}]}"), 4, "\"stop\"");
  for (const std::string& chunk : {with(R"(a " b)"), with("ends with a backslash\\"), with("\x01"), with("\xff"),
                                   with(R"(\ud800)"), with(R"(\x)"), other_id, stopped, base + " ", base.substr(1)}) {
    EXPECT_EQ(t.read(chunk), nullptr) << chunk;
  }
  // A chunk without a content string, or with several choices, is no template.
  ChunkTemplate none;
  EXPECT_FALSE(none.learn(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})"));
  EXPECT_FALSE(none.learn(R"({"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]})"));
  EXPECT_FALSE(none.learn(R"({"choices":[{"message":{"content":"a"}}]})"));
  EXPECT_TRUE(none.empty());
}

}  // namespace
}  // namespace mpo::openai
