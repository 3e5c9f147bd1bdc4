// The implementation of core/go_json.hpp. JSON text exactly as Go's encoding/json writes it
// (docs/FAK.md section 0), for documents that keep fak's schema names (sweep and parity receipts,
// attribution) and the digests taken over them: keys in insertion order, `<`, `>`, `&`, U+2028 and
// U+2029 escaped, invalid UTF-8 as \ufffd, floats in Go's shortest form (plain decimal unless the
// exponent is < -6 or >= 21; integral floats without a decimal point).
#include "core/go_json.hpp"

#include <openssl/evp.h>
#include <simdjson.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/json.hpp"
#include "core/time.hpp"

namespace mpo {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void newline(std::string& out, int level, bool pretty) {
  if (!pretty) return;
  out.push_back('\n');
  out.append(static_cast<std::size_t>(level) * 2, ' ');
}

// A container's items between its brackets ("[]" or "{}" when empty), one per line when pretty.
template <class It, class WriteItem>
void write_items(std::string& out, char open, char close, It first, It last, int indent, bool pretty,
                 WriteItem write_item) {
  out.push_back(open);
  for (It it = first; it != last; ++it) {
    if (it != first) out.push_back(',');
    newline(out, indent + 1, pretty);
    write_item(*it);
  }
  if (first != last) newline(out, indent, pretty);
  out.push_back(close);
}

void write_value(std::string& out, const boost::json::value& v, int indent, bool pretty) {
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; break;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
    case boost::json::kind::int64: out += std::to_string(v.get_int64()); break;
    case boost::json::kind::uint64: out += std::to_string(v.get_uint64()); break;
    case boost::json::kind::double_: append_go_float(out, v.get_double()); break;
    case boost::json::kind::string: append_go_string(out, v.get_string()); break;
    case boost::json::kind::array: {
      const auto& a = v.get_array();
      write_items(out, '[', ']', a.begin(), a.end(), indent, pretty,
                  [&](const boost::json::value& item) { write_value(out, item, indent + 1, pretty); });
      break;
    }
    case boost::json::kind::object: {
      const auto& o = v.get_object();
      write_items(out, '{', '}', o.begin(), o.end(), indent, pretty, [&](const boost::json::key_value_pair& kv) {
        append_go_string(out, kv.key());
        out += pretty ? ": " : ":";
        write_value(out, kv.value(), indent + 1, pretty);
      });
      break;
    }
  }
}

boost::json::value convert(simdjson::dom::element e) {
  using T = simdjson::dom::element_type;
  switch (e.type()) {
    case T::ARRAY: {
      simdjson::dom::array arr;
      boost::json::array a;
      if (e.get(arr) != simdjson::SUCCESS) return a;
      for (simdjson::dom::element item : arr) a.push_back(convert(item));
      return a;
    }
    case T::OBJECT: {
      simdjson::dom::object obj;
      boost::json::object o;
      if (e.get(obj) != simdjson::SUCCESS) return o;
      for (simdjson::dom::key_value_pair field : obj) o[field.key] = convert(field.value);
      return o;
    }
    case T::INT64: {
      std::int64_t v = 0;
      if (e.get(v) != simdjson::SUCCESS) return nullptr;
      return v;
    }
    case T::UINT64: {
      std::uint64_t v = 0;
      if (e.get(v) != simdjson::SUCCESS) return nullptr;
      return v;
    }
    case T::DOUBLE: {
      double v = 0;
      if (e.get(v) != simdjson::SUCCESS) return nullptr;
      return v;
    }
    case T::STRING: {
      std::string_view v;
      if (e.get(v) != simdjson::SUCCESS) return nullptr;
      return boost::json::string(v);
    }
    case T::BOOL: {
      bool v = false;
      if (e.get(v) != simdjson::SUCCESS) return nullptr;
      return v;
    }
    case T::NULL_VALUE: return nullptr;
  }
  return nullptr;
}

}  // namespace

void append_go_string(std::string& out, std::string_view s) { append_json_string_html_safe(out, s); }

void append_go_float(std::string& out, double v) {
  if (!std::isfinite(v)) {  // Go refuses these; a receipt never carries them
    out += "null";
    return;
  }
  if (v == 0) v = 0;  // -0 is written as 0 (Go writes "-0"; our receipts never hold it)
  char buf[64];
  const double a = std::fabs(v);
  const bool exp_form = a != 0 && (a < 1e-6 || a >= 1e21);
  auto r = std::to_chars(buf, buf + sizeof buf, v, exp_form ? std::chars_format::scientific : std::chars_format::fixed);
  std::string s(buf, r.ptr);
  if (exp_form) {
    // C++ writes e-07 / e+100 like Go's strconv; encoding/json then turns e-07 into e-7.
    const std::size_t n = s.size();
    if (n >= 4 && s[n - 4] == 'e' && s[n - 3] == '-' && s[n - 2] == '0') s.erase(n - 2, 1);
  }
  out += s;
}

std::string go_float_text(double v) {
  std::string s;
  append_go_float(s, v);
  return s;
}

std::string go_marshal(const boost::json::value& v) {
  std::string out;
  write_value(out, v, 0, false);
  return out;
}

std::string go_marshal_indent(const boost::json::value& v) {
  std::string out;
  write_value(out, v, 0, true);
  out.push_back('\n');
  return out;
}

Result<boost::json::value> parse_exact_json(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (auto err = parser.parse(padded).get(root); err) {
    return make_error(errc::kJsonParse, std::string("not valid JSON: ") + simdjson::error_message(err));
  }
  return convert(root);
}

std::string go_time(std::int64_t unix_us) {
  if (unix_us == 0) return "0001-01-01T00:00:00Z";
  std::string t = format_rfc3339_us(unix_us);  // ...SS.ffffffZ
  const auto dot = t.find('.');
  if (dot == std::string::npos) return t;
  std::size_t last = t.size() - 1;  // the 'Z'
  while (last > dot + 1 && t[last - 1] == '0') --last;
  if (last == dot + 1) return t.substr(0, dot) + "Z";
  return t.substr(0, last) + "Z";
}

std::string sha256_digest(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  std::string out = "sha256:";
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xF]);
  }
  return out;
}

bool is_sha256_digest(std::string_view s) {
  if (s.size() != 71 || s.substr(0, 7) != "sha256:") return false;
  for (char c : s.substr(7)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace mpo
