// Readers of the two event-typed APIs: the OpenAI Responses API (`/v1/responses`) and the
// Anthropic Messages API (`/v1/messages`), streamed events and whole bodies. How each one's usage
// maps onto ours is the table in docs/FORMATS.md ("Usage of each API"). Internal to the openai
// module: chunk.cpp dispatches to them by the payload's `type` (or `object`).
#pragma once

#include <simdjson.h>

#include <string_view>

#include "openai/chunk.hpp"

namespace mpo::openai::detail {

// A payload whose `type` is `response.*` (an event of a Responses stream), or a whole Responses
// body (`"object":"response"`).
void read_responses_event(simdjson::dom::element root, std::string_view type, PayloadInfo& info);
void read_responses_body(simdjson::dom::element root, PayloadInfo& info);

// True for the `type` of every event of an Anthropic Messages stream.
bool is_messages_event(std::string_view type);
// An event of a Messages stream (`message_start`, `content_block_delta`, ...), or a whole Messages
// body (`"type":"message"`).
void read_messages_event(simdjson::dom::element root, std::string_view type, PayloadInfo& info);
void read_messages_body(simdjson::dom::element root, PayloadInfo& info);

// An `error` event: Anthropic's `{"type":"error","error":{"type","message"}}` or the Responses
// API's `{"type":"error","code","message"}`.
void read_error_event(simdjson::dom::element root, PayloadInfo& info);

}  // namespace mpo::openai::detail
