// Mooncake-style request traces (issue 41): one JSON object per line, {"timestamp": ms since the
// first request, "input_length": tokens, "output_length": tokens, "hash_ids": [block ids]}, where
// each hash id names one block of `block_tokens` prompt tokens (512 in Mooncake's traces) and two
// requests that share leading hash ids share that prefix. The format is kvcache-ai/Mooncake's
// (FAST'25 release, `mooncake_trace.jsonl`), also read by NVIDIA's AIPerf and Dynamo's data
// generator. Pure.
//
// Prompts are synthesised block by block: the block of hash id h is the same words wherever h
// appears, drawn from words that are one token each on common tokenizers (checked on LLaMA-2's
// SentencePiece vocabulary through llama.cpp's /tokenize), so equal hash ids give equal token
// blocks on the engine and a request's prompt is about `input_length` tokens plus the chat
// template's own. A request's last block may be partial: the first words of its block.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "loadgen/workload.hpp"

namespace mpo::loadgen {

struct TraceOptions {
  std::int64_t block_tokens = 512;
  std::uint64_t seed = 1;  // which words each block is (the same seed, the same prompts)
  // A request asking for more is refused (its prompt would be built in memory).
  std::int64_t max_input_tokens = 2'000'000;
};

struct Trace {
  std::vector<ServingRequest> requests;  // in file order; arrival_offset_s from the first timestamp
  std::size_t blocks = 0;                // distinct hash ids
  std::size_t shared_blocks = 0;         // block uses beyond each id's first (what a prefix cache can serve)
  std::size_t block_uses = 0;
};

// Errors name the line. A request with more input than its hash ids cover, or hash ids beyond
// what its input needs, is refused: the trace and its block size disagree.
Result<Trace> parse_mooncake_trace(std::string_view text, const TraceOptions& opts);

// `n` words of text that are one token each on common tokenizers, drawn with `seed`.
std::string single_token_words(std::int64_t n, std::uint64_t seed);

}  // namespace mpo::loadgen
