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
      // Usage with plain integer counts (twenty-sixth session: read by the scan too).
      R"({"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})",
      R"({"id":"c","choices":[],"usage":{"prompt_tokens":10,"total_tokens":11,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}})",
      R"({"choices":[{"delta":{"content":"x"}}],"usage":{"completion_tokens":5,"completion_tokens_details":{"reasoning_tokens":2,"x":[1]},"prompt_tokens_details":null,"other":"y"}})",
      R"({"choices":[],"usage":{}})",
      R"({"choices":[],"usage":7})",
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
      R"({"choices":[],"usage":{"prompt_tokens":1.5}})",
      R"({"choices":[],"usage":{"prompt_tokens":-1}})",
      R"({"choices":[],"usage":{"prompt_tokens":null}})",
      R"({"choices":[],"usage":{"prompt_tokens":"3"}})",
      R"({"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}})",
      R"({"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}})",
      R"({"choices":[],"usage":{"prompt_tokens":1},"usage":null})",
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

TEST(ChunkTemplate, LearntFromAShapesReadItIsTheTemplateTheScanLearns) {
  // A real llama.cpp stream: a shape learnt from one content chunk reads the later ones, in which the
  // content (and so its closing quote) may lie elsewhere; the template taken from that read, with no
  // scan, reads every chunk as the one the scan learns from the same chunk does.
  const auto payloads = payloads_of(test::capture_body("llamacpp/llamacpp_b10309_chat_stream.http"));
  ChunkShape shape;
  ASSERT_TRUE(shape.learn(payloads[1]));
  std::size_t taught = 0;
  for (std::size_t i = 1; i < payloads.size(); ++i) {
    // The content chunks, the shape's own among them (its content read in a run of equal bytes; the
    // others' where the bytes differ); the finish and usage chunks differ outside the values.
    if (shape.read(payloads[i]) == nullptr) continue;
    ChunkTemplate by_shape, by_scan;
    ASSERT_TRUE(by_shape.learn(payloads[i], shape));
    ASSERT_TRUE(by_scan.learn(payloads[i]));
    for (const auto& p : payloads) {
      const PayloadInfo* a = by_shape.read(p);
      const PayloadInfo* b = by_scan.read(p);
      ASSERT_EQ(a == nullptr, b == nullptr) << p;
      if (a != nullptr) {
        EXPECT_EQ(*a, *b) << p;
      }
    }
    ++taught;
  }
  EXPECT_GE(taught, 3u);
  // A shape without the one choice's content string (a usage chunk), or whose last read did not
  // answer, teaches no template.
  const std::string usage_chunk =
      R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":8,"total_tokens":9,"completion_tokens":1}})";
  ChunkShape usage;
  ASSERT_TRUE(usage.learn(usage_chunk));
  ASSERT_NE(usage.read(usage_chunk), nullptr);
  ChunkTemplate none;
  EXPECT_FALSE(none.learn(usage_chunk, usage));
  ASSERT_EQ(shape.read(payloads.back()), nullptr);
  EXPECT_FALSE(none.learn(payloads[1], shape));
  EXPECT_TRUE(none.empty());
}

// A shape's reading of `chunk`, checked against the full parse's (with the id left out when not
// wanted); false when the shape does not read it.
bool read_as_the_full_parse(ChunkShape& shape, const std::string& chunk) {
  const PayloadInfo* known = shape.read(chunk);
  if (known == nullptr) return false;
  EXPECT_EQ(*known, classify_chunk_fully(chunk)) << chunk;
  PayloadInfo without_id = classify_chunk_fully(chunk);
  without_id.id.clear();
  const PayloadInfo* no_id = shape.read(chunk, IdWanted::kNo);
  EXPECT_TRUE(no_id != nullptr && *no_id == without_id) << chunk;
  return true;
}

// The same stream as another response would send it: another id, another `created`.
std::string as_another_response(std::string chunk) {
  const auto id = chunk.find("chatcmpl-");
  if (id != std::string::npos) chunk.replace(id, 9, "chatcmpl-another-response-");
  const auto created = chunk.find("\"created\":");
  if (created != std::string::npos) chunk.insert(created + 10, "1");
  return chunk;
}

TEST(ChunkShape, ReadsEveryLaterChunkOfARealLlamaCppStreamAndOfAnotherResponseAsTheFullParseDoes) {
  const auto payloads = payloads_of(test::capture_body("llamacpp/llamacpp_b10309_chat_stream.http"));
  ChunkShape content;
  ASSERT_TRUE(content.learn(payloads[1]));  // the first content chunk
  int read = 0;
  for (std::size_t i = 1; i < payloads.size(); ++i) {
    if (read_as_the_full_parse(content, payloads[i])) ++read;
    // The same chunk from another response (an id and a `created` of other lengths) fits too.
    if (read_as_the_full_parse(content, as_another_response(payloads[i]))) ++read;
  }
  // Every content chunk, twice (the role chunk, the finish chunk and the usage chunk differ elsewhere).
  EXPECT_GE(read, 10);
  EXPECT_EQ(content.read(payloads[0]), nullptr);
  EXPECT_EQ(content.read(payloads.back()), nullptr);
  // The role chunk is a shape of its own, read across responses.
  ChunkShape role;
  ASSERT_TRUE(role.learn(payloads[0]));
  EXPECT_TRUE(read_as_the_full_parse(role, as_another_response(payloads[0])));
  EXPECT_EQ(role.read(as_another_response(payloads[0]))->kind, ChunkKind::kRoleOnly);
}

TEST(ChunkShape, ReadsOnlyAChunkThatIsItsBytesButForValidValuesOfTheSameKind) {
  const std::string base =
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"first"},"logprobs":null,"finish_reason":null}]})";
  const auto with = [&base](std::string_view from, std::string_view to) {
    std::string s = base;
    return s.replace(s.find(from), from.size(), to);
  };
  ChunkShape t;
  ASSERT_TRUE(t.learn(base));
  for (const std::string& content :
       {std::string(), std::string("x"), std::string(R"(a \"quoted\" word)"), std::string(R"(\n\t\\ \u00e9 \/)"),
        std::string("caf\xc3\xa9"), std::string(300, 'y')}) {
    EXPECT_TRUE(read_as_the_full_parse(t, with("first", content))) << content;
  }
  EXPECT_EQ(t.read(with("first", ""))->kind, ChunkKind::kRoleOnly);  // the role decides when the content is empty
  EXPECT_EQ(t.read(with("first", "x"))->kind, ChunkKind::kContent);
  EXPECT_EQ(t.read(with("\"assistant\"", "\"\""))->kind, ChunkKind::kContent);
  // Other values, of the same kind: the id, the model, `created`, `index`.
  for (const std::string& chunk :
       {with("chatcmpl-1", "chatcmpl-2"), with("chatcmpl-1", ""), with("\"m\"", "\"model-b\""),
        with(":1,", ":123456789012345,"), with("\"index\":0", "\"index\":2")}) {
    EXPECT_TRUE(read_as_the_full_parse(t, chunk)) << chunk;
  }
  EXPECT_EQ(t.read(with("\"m\"", "\"model-b\""))->model, "model-b");
  // Not the shape's bytes, a value of another kind, or not one valid token: the full parse's.
  for (const std::string& chunk : {with("first", R"(a " b)"),
                                   with("first", "ends with a backslash\\"),
                                   with("first", "\x01"),
                                   with("first", "\xff"),
                                   with("first", R"(\ud800)"),
                                   with("first", R"(\x)"),
                                   with("null}]}", "\"stop\"}]}"),  // finish_reason: null was the shape's
                                   with("\"m\"", "7"),
                                   with(":1,", ":\"1\","),  // a string for a number, a number for a string
                                   with(":1,", ":1e3,"),
                                   with(":1,", ":01,"),
                                   with(":1,", ":1234567890123456,"),  // not the scan's numbers
                                   with("\"m\"", R"("m\u0031")"),
                                   with("chatcmpl-1", R"(chat\/1)"),        // a copied value with an escape
                                   with("chat.completion.chunk", "error"),  // `object` decides the reader
                                   with("\"index\":0", "\"index\":null"),
                                   with("\"index\":0", "\"index\":-2.5"),  // an index read as no plain integer
                                   base + " ",
                                   base.substr(1),
                                   base.substr(0, base.size() - 1)}) {
    EXPECT_EQ(t.read(chunk), nullptr) << chunk;
  }
  // What the scan does not read is no shape.
  ChunkShape none;
  EXPECT_FALSE(none.learn(R"({"choices":[{"delta":{"content":"x"}}],"timings":{"predicted_n":1}})"));
  EXPECT_FALSE(none.learn(R"({"type":"response.output_text.delta","delta":"x"})"));
  EXPECT_TRUE(none.empty());
}

TEST(ChunkShape, ReadsUsageCountsFinishReasonsAndEveryChoiceFromItsValues) {
  // vLLM's usage chunk and its continuous usage (a count in every chunk), two choices, a message
  // beside a delta (the full parse reads the delta). Invented edge cases around real shapes.
  ChunkShape usage;
  ASSERT_TRUE(usage.learn(
      R"({"id":"a","choices":[],"usage":{"prompt_tokens":10,"total_tokens":11,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}})"));
  const std::string other =
      R"({"id":"bb","choices":[],"usage":{"prompt_tokens":7,"total_tokens":907,"completion_tokens":900,"prompt_tokens_details":{"cached_tokens":4}}})";
  ASSERT_TRUE(read_as_the_full_parse(usage, other));
  EXPECT_EQ(usage.read(other)->usage->completion_tokens, 900);
  EXPECT_EQ(usage.read(other)->usage->cached_prompt_tokens, 4);
  EXPECT_EQ(usage.read(other)->kind, ChunkKind::kUsageOnly);
  EXPECT_EQ(
      usage.read(
          R"({"id":"bb","choices":[],"usage":{"prompt_tokens":7.5,"total_tokens":907,"completion_tokens":900,"prompt_tokens_details":{"cached_tokens":4}}})"),
      nullptr);  // a count that is no plain integer: the full parse's
  EXPECT_EQ(
      usage.read(
          R"({"id":"bb","choices":[],"usage":{"prompt_tokens":-7,"total_tokens":907,"completion_tokens":900,"prompt_tokens_details":{"cached_tokens":4}}})"),
      nullptr);

  ChunkShape two;
  const std::string chunk =
      R"({"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"},{"index":1,"delta":{"reasoning":""},"message":{"content":"m"},"finish_reason":"length"}],"usage":{"completion_tokens":3}})";
  ASSERT_TRUE(two.learn(chunk));
  const auto with = [&chunk](std::string_view from, std::string_view to) {
    std::string s = chunk;
    return s.replace(s.find(from), from.size(), to);
  };
  for (const std::string& c :
       {chunk, with("\"a\"", "\"\""), with("\"stop\"", "\"tool_calls\""),
        with("\"reasoning\":\"\"", "\"reasoning\":\"r\""), with("\"m\"", "\"\""), with(":3}", ":42}")}) {
    EXPECT_TRUE(read_as_the_full_parse(two, c)) << c;
  }
  EXPECT_EQ(two.read(with("\"a\"", "\"\""))->kind, ChunkKind::kEmpty);  // the message's content decides nothing
  EXPECT_EQ(two.read(with("\"stop\"", "\"tool_calls\""))->finish_reason, "tool_calls");
  EXPECT_EQ(two.read(with(":3}", ":42}"))->usage->completion_tokens, 42);
}

// A request for two choices (`n` 2): llama.cpp b10309 streams them interleaved, each chunk naming
// its choice by `index` (real capture). Every reader says the index the full parse says, and a
// shape learnt from one choice's chunk reads the other's.
TEST(ChunkShape, AChoicesIndexIsReadAsTheFullParseReadsIt) {
  const auto payloads = payloads_of(test::capture_body("llamacpp/llamacpp_b10309_chat_stream_n2.http"));
  ASSERT_EQ(payloads.size(), 14u);  // and [DONE]
  std::vector<int> indexes;
  ChunkShape shape;
  for (const auto& p : payloads) {
    const PayloadInfo full = classify_chunk_fully(p);
    if (full.choices > 0) indexes.push_back(full.first_choice_index);
    if (const auto scanned = scan_chat_chunk(p)) {
      EXPECT_EQ(*scanned, full) << p;
    }
    if (shape.empty()) {
      ASSERT_TRUE(shape.learn(p));
    } else if (const PayloadInfo* read = shape.read(p)) {
      EXPECT_EQ(*read, full) << p;
    }
  }
  EXPECT_EQ(indexes, (std::vector<int>{1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0}));
  // Content chunks of both choices, read by one shape: the index is a value like any other.
  ChunkShape content;
  ASSERT_TRUE(content.learn(payloads[1]));
  ASSERT_EQ(classify_chunk_fully(payloads[1]).first_choice_index, 1);
  ASSERT_EQ(classify_chunk_fully(payloads[3]).first_choice_index, 0);
  ASSERT_NE(content.read(payloads[3]), nullptr);
  EXPECT_EQ(content.read(payloads[3])->first_choice_index, 0);
  EXPECT_EQ(content.read(payloads[1])->first_choice_index, 1);
  // Values the full parse reads as 0, and a number that is no plain integer (left to it).
  for (const char* c :
       {R"({"choices":[{"index":"1","delta":{"content":"a"}}]})",
        R"({"choices":[{"index":null,"delta":{"content":"a"}}]})",
        R"({"choices":[{"index":70000,"delta":{"content":"a"}}]})", R"({"choices":[{"delta":{"content":"a"}}]})"}) {
    EXPECT_EQ(classify_chunk_fully(c).first_choice_index, 0) << c;
    const auto scanned = scan_chat_chunk(c);
    ASSERT_TRUE(scanned) << c;
    EXPECT_EQ(*scanned, classify_chunk_fully(c)) << c;
  }
  EXPECT_FALSE(scan_chat_chunk(R"({"choices":[{"index":-1,"delta":{"content":"a"}}]})"));
  EXPECT_FALSE(scan_chat_chunk(R"({"choices":[{"index":1.5,"delta":{"content":"a"}}]})"));
  EXPECT_EQ(classify_chunk_fully(R"({"choices":[{"index":-1,"delta":{"content":"a"}}]})").first_choice_index, 0);
  EXPECT_EQ(classify_chunk_fully(R"({"choices":[{"index":3,"delta":{"content":"a"}}]})").first_choice_index, 3);
  ChunkShape numbered;
  ASSERT_TRUE(numbered.learn(R"({"choices":[{"index":0,"delta":{"content":"a"}}]})"));
  EXPECT_EQ(numbered.read(R"({"choices":[{"index":7,"delta":{"content":"a"}}]})")->first_choice_index, 7);
  EXPECT_EQ(numbered.read(R"({"choices":[{"index":1.5,"delta":{"content":"a"}}]})"), nullptr);
  EXPECT_EQ(numbered.read(R"({"choices":[{"index":0,"delta":{"content":"a"}}]})")->first_choice_index, 0);
}

TEST(ChunkShapes, AThreadsShapesReadEveryChunkOfTheResponsesAfterTheFirst) {
  // The proxy's loop reads every response's chunks with one set of shapes: after the first response
  // learnt them, the next responses' chunks (other ids, other `created`) are read without a parse,
  // however the streams' chunks interleave.
  const auto payloads = payloads_of(test::capture_body("llamacpp/llamacpp_b10309_chat_stream.http"));
  ChunkShapes shapes;
  std::size_t last = ChunkShapes::kNone;
  for (const auto& p : payloads) {
    if (shapes.read(p, IdWanted::kYes, last) == nullptr) (void)shapes.learn(p, last);
  }
  int read = 0, parsed = 0;
  std::size_t a = ChunkShapes::kNone, b = ChunkShapes::kNone;  // two streams, chunk by chunk in turn
  for (const auto& p : payloads) {
    for (std::size_t* stream : {&a, &b}) {
      const std::string chunk = as_another_response(p);
      const PayloadInfo* known = shapes.read(chunk, IdWanted::kYes, *stream);
      if (known == nullptr) {
        ++parsed;
        continue;
      }
      ++read;
      EXPECT_EQ(*known, classify_chunk_fully(chunk)) << chunk;
    }
  }
  EXPECT_EQ(parsed, 2);  // each stream's last chunk, with llama.cpp's timings: the full parse's
  EXPECT_EQ(read, 2 * (static_cast<int>(payloads.size()) - 1));
}

// llama.cpp b10309's tool-call chunks (real captures, tests/fixtures/SOURCES.md): the call's head
// (index, id, type, name, the first piece of the arguments) and its later pieces are read by the
// shapes the loop learns exactly as the full parse reads them, in this response and in the next.
TEST(ChunkShapes, ARealLlamaCppToolCallStreamIsReadAsTheFullParseReadsIt) {
  for (const char* name : {"llamacpp/llamacpp_b10309_chat_stream_tool_call_usage.http",
                           "llamacpp/llamacpp_b10309_chat_stream_tool_calls_after_text.http"}) {
    const auto payloads = payloads_of(test::capture_body(name));
    int calls = 0;
    for (const auto& p : payloads) calls += classify_chunk_fully(p).kind == ChunkKind::kToolCalls;
    EXPECT_GE(calls, 13) << name;
    ChunkShapes shapes;
    std::size_t last = ChunkShapes::kNone;
    for (const auto& p : payloads) {
      if (const PayloadInfo* known = shapes.read(p, IdWanted::kYes, last)) {
        EXPECT_EQ(*known, classify_chunk_fully(p)) << p;
      } else {
        (void)shapes.learn(p, last);
      }
    }
    int read = 0, tool_calls_read = 0;
    std::size_t next = ChunkShapes::kNone;
    for (const auto& p : payloads) {
      const std::string chunk = as_another_response(p);
      const PayloadInfo* known = shapes.read(chunk, IdWanted::kYes, next);
      if (known == nullptr) continue;
      ++read;
      tool_calls_read += known->kind == ChunkKind::kToolCalls;
      EXPECT_EQ(*known, classify_chunk_fully(chunk)) << chunk;
    }
    // The argument pieces of the next response are read without a parse.
    EXPECT_GE(tool_calls_read, calls - 3) << name;
    EXPECT_GE(read, static_cast<int>(payloads.size()) - 5) << name;
  }
}

TEST(ChunkShapes, MoreShapesThanItKeepsReplaceTheOldestAndAreStillReadRight) {
  ChunkShapes shapes;
  std::size_t last = ChunkShapes::kNone;
  const auto chunk = [](int i) {
    return R"({"choices":[{"index":0,"delta":{"content":"x"}}],"k)" + std::to_string(i) + R"(":1})";
  };
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(shapes.learn(chunk(i), last));
  for (int i = 0; i < 9; ++i) {
    std::size_t fresh = ChunkShapes::kNone;
    const PayloadInfo* known = shapes.read(chunk(i), IdWanted::kYes, fresh);
    if (i < 3) {
      EXPECT_EQ(known, nullptr) << i;  // replaced
    } else {
      ASSERT_NE(known, nullptr) << i;
      EXPECT_EQ(*known, classify_chunk_fully(chunk(i)));
    }
  }
}

}  // namespace
}  // namespace mpo::openai
