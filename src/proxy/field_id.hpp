// A header field's name as Beast's enum (edge: Beast), through a small table each thread keeps of
// the names it met last: the same few names come in every request and response, and Beast's own
// lookup hashes each name case-blind (~140 instructions) where a name seen before costs one compare
// of its bytes (issue 43). Exact bytes are kept: "Host" and "host" take a slot each, with one enum.
#pragma once

#include <boost/beast/http/field.hpp>
#include <string_view>

namespace mpo::proxy {

// http::string_to_field(name), the same for every name in any casing.
boost::beast::http::field field_id(std::string_view name);

}  // namespace mpo::proxy
