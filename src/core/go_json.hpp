// JSON text exactly as Go's encoding/json writes it (docs/FAK.md section 0), for documents that
// keep fak's schema names (sweep and parity receipts, attribution) and the digests taken over
// them: keys in insertion order, `<`, `>`, `&`, U+2028 and U+2029 escaped, invalid UTF-8 as
// \ufffd, floats in Go's shortest form (plain decimal unless the exponent is < -6 or >= 21;
// integral floats without a decimal point).
// Documents are built as boost::json values (objects keep insertion order); reading goes through
// simdjson so that every number comes back bit for bit.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo {

// json.Marshal: compact, no trailing newline.
std::string go_marshal(const boost::json::value& v);
// json.MarshalIndent(v, "", "  ") followed by one "\n", as fak's encoders write files.
std::string go_marshal_indent(const boost::json::value& v);

void append_go_string(std::string& out, std::string_view s);
void append_go_float(std::string& out, double v);
// The same as a string (labels and messages that show a number the way the receipt writes it).
std::string go_float_text(double v);

// Parses one JSON document exactly (numbers through simdjson); trailing data is an error.
Result<boost::json::value> parse_exact_json(std::string_view text);

// Go's time.Time text: RFC 3339 UTC with the fraction's trailing zeros removed
// ("2026-08-22T07:16:05.1021Z", "2026-08-22T07:16:05Z"); 0 is Go's zero time.
std::string go_time(std::int64_t unix_us);

// "sha256:" + lowercase hex of SHA-256 over `bytes`.
std::string sha256_digest(std::string_view bytes);
// True for "sha256:" followed by 64 lowercase or uppercase hex digits.
bool is_sha256_digest(std::string_view s);

}  // namespace mpo
