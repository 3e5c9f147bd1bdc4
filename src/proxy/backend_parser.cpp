// The implementation of proxy/backend_parser.hpp. Each rule is Beast 1.81's (basic_parser.ipp and
// detail/basic_parser.ipp), written again to read whole runs of bytes at once:
//   status-line  = "HTTP/" DIGIT "." DIGIT SP 3DIGIT SP reason CRLF   (versions 1.0 and 1.1 only)
//   field-line   = token ":" OWS value OWS CRLF, a value continued on lines that start with SP/HTAB
//                  (obs-fold) joined by one space, up to 4,096 bytes
//   reason/value = no control character but HTAB (bytes 0x80-0xFF allowed)
//   framing      = no body for HEAD, 1xx, 204, 304; else Content-Length, else chunked as the final
//                  transfer coding, else the body runs to the close (RFC 9112 6.3)
//   chunk        = HEX [ chunk-ext ] CRLF data CRLF ... "0" [ chunk-ext ] CRLF trailer-fields CRLF
#include "proxy/backend_parser.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/text.hpp"
#include "proxy/field_id.hpp"

namespace mpo::proxy {
namespace {

using error_code = boost::system::error_code;

constexpr std::size_t kMaxFoldedValue = 4096;  // Beast's max_obs_fold

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The first control character other than HTAB (bytes below 0x20, and 0x7F) at or after `p`, or
// `last`: sixteen bytes at a time.
const char* find_control(const char* p, const char* last) {
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(0x20), tab = _mm_set1_epi8('\t'), del = _mm_set1_epi8(0x7f);
  for (; last - p >= 16; p += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i printable = _mm_cmpeq_epi8(_mm_max_epu8(x, space), x);  // x >= 0x20, unsigned
    const __m128i ok = _mm_andnot_si128(_mm_cmpeq_epi8(x, del), _mm_or_si128(printable, _mm_cmpeq_epi8(x, tab)));
    const unsigned bad = ~static_cast<unsigned>(_mm_movemask_epi8(ok)) & 0xffffu;
    if (bad != 0) return p + __builtin_ctz(bad);
  }
#endif
  for (; p < last; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return p;
  }
  return last;
}

// A reason phrase's or a value line's bytes up to its CRLF: the byte after the CRLF, with `end` at
// the CR; nullptr when another control character comes first; need_more or bad_line_ending (a CR
// without its LF) in `ec`.
const char* to_line_end(const char* p, const char* last, const char*& end, error_code& ec) {
  p = find_control(p, last);
  if (p == last) {
    ec = http::error::need_more;
    return last;
  }
  if (*p != '\r') return nullptr;
  if (p + 1 == last) {
    ec = http::error::need_more;
    return last;
  }
  if (p[1] != '\n') {
    ec = http::error::bad_line_ending;
    return last;
  }
  end = p;
  return p + 2;
}

const char* trim_back(const char* end, const char* first) {
  while (end != first && is_space(end[-1])) --end;
  return end;
}

// The byte after the first CRLF at or after `p`; nullptr when none is whole yet, or when a CR is
// followed by anything else (then bad_line_ending).
const char* find_line_end(const char* p, const char* last, error_code& ec) {
  const void* cr = std::memchr(p, '\r', static_cast<std::size_t>(last - p));
  if (cr == nullptr) return nullptr;
  p = static_cast<const char*>(cr) + 1;
  if (p == last) return nullptr;
  if (*p != '\n') {
    ec = http::error::bad_line_ending;
    return nullptr;
  }
  return p + 1;
}

// The byte after the first empty line's CRLF CRLF at or after `p`, or nullptr.
const char* find_blank_line(const char* p, const char* last) {
  const std::string_view bytes(p, static_cast<std::size_t>(last - p));
  const auto at = bytes.find("\r\n\r\n");
  return at == std::string_view::npos ? nullptr : p + at + 4;
}

// A chunk size: one hex digit or more, within 64 bits. `p` moves past them. Stops at the CR that
// is known to follow.
bool parse_hex(const char*& p, std::uint64_t& v) {
  int d = hex_digit_value(*p);
  if (d < 0) return false;
  std::uint64_t n = 0;
  do {
    if (n > std::numeric_limits<std::uint64_t>::max() / 16) return false;
    n = n * 16 + static_cast<std::uint64_t>(d);
    d = hex_digit_value(*++p);
  } while (d >= 0);
  v = n;
  return true;
}

// A decimal number within 64 bits, nothing else.
bool parse_decimal(std::string_view s, std::uint64_t& v) {
  if (s.empty()) return false;
  std::uint64_t n = 0;
  for (const char c : s) {
    if (!is_digit(c) || n > std::numeric_limits<std::uint64_t>::max() / 10) return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (std::numeric_limits<std::uint64_t>::max() - n * 10 < d) return false;
    n = n * 10 + d;
  }
  v = n;
  return true;
}

// Past a chunk's extensions (RFC 9112 7.1.1 with erratum 4667, as Beast reads them):
//   *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )
// Stops at the first byte that starts none; the caller checks that this is the line's CR.
const char* skip_chunk_extensions(const char* it, const char* last, error_code& ec) {
  const auto more = [&] {
    ec = http::error::need_more;
    return it;
  };
  const auto bad = [&] {
    ec = http::error::bad_chunk_extension;
    return it;
  };
  const auto past_spaces = [&] {  // false at the end of the bytes
    while (it != last && is_space(*it)) ++it;
    return it != last;
  };
  const auto past_token = [&] {
    while (it != last && is_token_char(*it)) ++it;
    return it != last;
  };
  for (;;) {
    if (it == last) return more();
    if (!is_space(*it) && *it != ';') return it;
    if (!past_spaces()) return more();
    if (*it != ';') return bad();
    for (bool another = true; another;) {  // at a ';'
      another = false;
      ++it;
      if (!past_spaces()) return more();
      if (!is_token_char(*it)) return bad();
      if (!past_token()) return more();
      const char* const name_end = it;
      if (!past_spaces()) return more();
      if (*it == ';') {
        another = true;
        continue;
      }
      if (*it != '=') return it != name_end ? bad() : it;
      ++it;
      if (!past_spaces()) return more();
      if (*it != '"') {
        if (!is_token_char(*it)) return bad();
        if (!past_token()) return more();
        continue;
      }
      for (;;) {  // a quoted string, its backslash pairs included
        if (++it == last) return more();
        if (*it == '"') break;
        if (*it == '\\' && ++it == last) return more();
      }
      ++it;
    }
  }
}

}  // namespace

BackendHead::const_iterator BackendHead::find(http::field id) const {
  const BackendFieldAt* f = at_->data();
  const BackendFieldAt* const last = f + at_->size();
  while (f != last && f->id != id) ++f;
  return {this, f};
}

bool BackendParser::keep_alive() const {
  if (http11_ ? connection_close_ : !connection_keep_alive_) return false;
  return !need_eof_;
}

std::size_t BackendParser::put(boost::asio::const_buffer bytes, error_code& ec) {
  ec = {};
  if (state_ == State::kComplete) {
    ec = http::error::stale_parser;
    return 0;
  }
  const char* const first = static_cast<const char*>(bytes.data());
  const char* const last = first + bytes.size();
  if (first == last) {
    ec = http::error::need_more;
    return 0;
  }
  const char* p = first;
  if (state_ == State::kNothingYet) state_ = State::kStartLine;
  while (!ec && p != last) {
    switch (state_) {
      case State::kNothingYet:
      case State::kStartLine:
      case State::kFields:
        // The head alone, as Beast's parser: a body that breaks HTTP is the relay's to find, after
        // the client has had the head.
        p = parse_head(p, last, ec);
        if (is_header_done()) return static_cast<std::size_t>(p - first);
        break;
      case State::kLengthBody: {
        const std::size_t took = put_body(p, static_cast<std::size_t>(std::min<std::uint64_t>(length_, last - p)), ec);
        p += took;
        length_ -= took;
        if (!ec && length_ == 0) state_ = State::kComplete;
        break;
      }
      case State::kBodyToEof: p += put_body(p, static_cast<std::size_t>(last - p), ec); break;
      case State::kChunkHeader: p = parse_chunk_header(p, last, ec); break;
      case State::kChunkBody: {
        const std::size_t took = put_body(p, static_cast<std::size_t>(std::min<std::uint64_t>(length_, last - p)), ec);
        p += took;
        length_ -= took;
        if (length_ == 0) state_ = State::kChunkHeader;
        break;
      }
      case State::kComplete: return static_cast<std::size_t>(p - first);
    }
  }
  return static_cast<std::size_t>(p - first);
}

void BackendParser::put_eof(error_code& ec) {
  ec = {};
  if (!is_header_done() || ((has_length_ || chunked_) && state_ != State::kComplete)) {
    ec = http::error::partial_message;
    return;
  }
  state_ = State::kComplete;
}

// The status line and the fields, as far as they are whole; the fields taken are kept. The head
// may take header_limit bytes in all.
const char* BackendParser::parse_head(const char* p, const char* last, error_code& ec) {
  const std::size_t room = header_limit_ > head_used_ ? header_limit_ - head_used_ : 0;
  const bool limited = static_cast<std::size_t>(last - p) >= room;
  const char* const end = limited ? p + room : last;
  if (head_resume_ != 0) {
    // A head not whole before is parsed again only once its end is there (Beast's rule: the bytes
    // are not looked at twice, and a broken line is found when the head is whole).
    const auto n = static_cast<std::size_t>(end - p);
    if (n < head_resume_ + 4) {
      ec = http::error::need_more;
      return p;
    }
    if (find_blank_line(p + head_resume_, end) == nullptr) {
      head_resume_ = n - 3;
      ec = head_resume_ + 4 > room ? http::error::header_limit : http::error::need_more;
      return p;
    }
    head_resume_ = 0;
  }
  const char* q = p;
  if (state_ == State::kStartLine) {
    q = parse_start_line(p, end, ec);
    if (!ec) state_ = State::kFields;
  }
  if (!ec) q = parse_fields(q, end, false, ec);
  head_used_ += static_cast<std::size_t>(q - p);
  if (ec == http::error::need_more && limited) {
    ec = http::error::header_limit;
  } else if (ec == http::error::need_more && last - q >= 3) {
    head_resume_ = static_cast<std::size_t>(last - q - 3);  // its end may start in the last three bytes
  } else if (!ec) {
    finish_head(ec);
  }
  return q;
}

const char* BackendParser::parse_start_line(const char* p, const char* last, error_code& ec) {
  if (last - p < 8) {
    ec = http::error::need_more;
    return p;
  }
  if (std::memcmp(p, "HTTP/", 5) != 0 || !is_digit(p[5]) || p[6] != '.' || !is_digit(p[7])) {
    ec = http::error::bad_version;
    return p;
  }
  const unsigned version = static_cast<unsigned>((p[5] - '0') * 10 + (p[7] - '0'));
  if (version < 10 || version > 11) {
    ec = http::error::bad_version;
    return p;
  }
  const char* q = p + 8;
  if (q == last) {
    ec = http::error::need_more;
    return p;
  }
  if (*q++ != ' ') {
    ec = http::error::bad_version;
    return p;
  }
  if (last - q < 4) {
    ec = http::error::need_more;
    return p;
  }
  if (!is_digit(q[0]) || !is_digit(q[1]) || !is_digit(q[2]) || q[3] != ' ') {
    ec = http::error::bad_status;
    return p;
  }
  const unsigned status = static_cast<unsigned>((q[0] - '0') * 100 + (q[1] - '0') * 10 + (q[2] - '0'));
  const char* reason_end = nullptr;
  const char* const next = to_line_end(q + 4, last, reason_end, ec);
  if (ec) return p;
  if (next == nullptr) {
    ec = http::error::bad_reason;
    return p;
  }
  head_.status_ = status;
  head_.version_ = version;
  http11_ = version >= 11;
  return next;
}

// Field lines up to the empty line, or as far as they are whole; the head's kept, a trailer's
// only checked. The head's lines are copied as they came, once for all taken in one call; a field
// is where its name and value lie in them (or, folded, in folded_).
const char* BackendParser::parse_fields(const char* p, const char* last, bool trailer, error_code& ec) {
  const char* const begin = p;
  const std::size_t base = bytes_->size();
  const auto keep = [&](const char* end) {
    if (!trailer && end != begin) bytes_->append(begin, end);
    return end;
  };
  for (;;) {
    if (last - p < 2) {
      ec = http::error::need_more;
      return keep(p);
    }
    if (p[0] == '\r') {
      if (p[1] != '\n') ec = http::error::bad_line_ending;
      return keep(p + 2);
    }
    std::string_view name, value;
    bool folded = false;
    const char* const next = parse_field(p, last, name, value, folded, ec);
    if (ec) return keep(p);
    const http::field id = field_id(name);
    apply_field(id, value, ec);
    if (ec) return keep(p);
    if (!trailer) {
      if (offsets_->empty()) offsets_->reserve(16);
      offsets_->push_back({id, folded, base + static_cast<std::size_t>(name.data() - begin), name.size(),
                           folded ? static_cast<std::size_t>(value.data() - folded_.data())
                                  : base + static_cast<std::size_t>(value.data() - begin),
                           value.size()});
      if (id == http::field::content_length) head_.content_length_field_ = true;
    }
    p = next;
  }
}

// One field line at `p` (not an empty line): its name and its value (trimmed; folded lines
// joined). A line is whole only with the byte after its CRLF, which says whether it continues.
const char* BackendParser::parse_field(const char* p, const char* last, std::string_view& name, std::string_view& value,
                                       bool& folded, error_code& ec) {
  // The name: token characters up to the colon (bad_field at any other before it; need_more when
  // the bytes end first).
  const void* colon = std::memchr(p, ':', static_cast<std::size_t>(last - p));
  const char* q = colon != nullptr ? static_cast<const char*>(colon) : last;
  bool token = true;
  for (const char* c = p; c != q; ++c) token &= is_token_char(*c);
  if (colon == nullptr || !token || q == p) {
    ec = colon == nullptr && token ? http::error::need_more : http::error::bad_field;
    return p;
  }
  name = std::string_view(p, static_cast<std::size_t>(q - p));
  ++q;
  // One line's value: past the leading spaces, to the CRLF, with the byte after it there to see.
  const char* first = nullptr;
  const char* end = nullptr;
  const auto line = [&]() -> bool {
    while (q != last && is_space(*q)) ++q;
    if (q == last) {
      ec = http::error::need_more;
      return false;
    }
    first = q;
    q = to_line_end(q, last, end, ec);
    if (ec) return false;
    if (q == nullptr) {
      ec = http::error::bad_value;
      return false;
    }
    if (q == last) {
      ec = http::error::need_more;
      return false;
    }
    end = trim_back(end, first);
    return true;
  };
  for (;;) {
    if (!line()) return p;
    if (!is_space(*q)) {
      value = std::string_view(first, static_cast<std::size_t>(end - first));
      return q;
    }
    ++q;
    if (end != first) break;  // folded: empty lines before the first with text are skipped
  }
  // The folded value is joined at the end of folded_, after those of the fields before it.
  const std::size_t start = folded_.size();
  const auto fail = [&](const boost::system::error_code& why) {
    folded_.resize(start);
    if (why) ec = why;
    return p;
  };
  if (end - first > static_cast<std::ptrdiff_t>(kMaxFoldedValue)) return fail(http::error::header_limit);
  folded_.append(first, end);
  for (;;) {
    if (!line()) return fail({});
    if (end != first) {
      if (folded_.size() - start + 1 + static_cast<std::size_t>(end - first) > kMaxFoldedValue) {
        return fail(http::error::header_limit);
      }
      folded_ += ' ';
      folded_.append(first, end);
    }
    if (!is_space(*q)) {
      value = std::string_view(folded_).substr(start);
      folded = true;
      return q;
    }
    ++q;
  }
}

// What a field says of the framing and the connection: Connection (and Proxy-Connection),
// Content-Length, Transfer-Encoding; their conflicts are errors.
void BackendParser::apply_field(http::field id, std::string_view value, error_code& ec) {
  switch (id) {
    case http::field::connection:
    case http::field::proxy_connection: {
      const auto note = [&](std::string_view token) {
        if (boost::beast::iequals(token, "close")) connection_close_ = true;
        if (boost::beast::iequals(token, "keep-alive")) connection_keep_alive_ = true;
      };
      if (value.find(',') == std::string_view::npos && !value.empty() &&
          std::all_of(value.begin(), value.end(), is_token_char)) {
        note(value);  // one token, the usual case
        return;
      }
      const http::opt_token_list list{value};
      if (!http::validate_list(list)) {
        ec = http::error::bad_value;
        return;
      }
      for (const auto& token : list) note(token);
      return;
    }
    case http::field::content_length: apply_content_length(value, ec); return;
    case http::field::transfer_encoding: {
      if (chunked_ || has_length_) {
        ec = http::error::bad_transfer_encoding;
        return;
      }
      if (boost::beast::iequals(value, "chunked")) {  // the usual case
        chunked_ = true;
        length_ = 0;
        return;
      }
      // Chunked only as the final coding, its first mention that (Beast's rule).
      const http::token_list codings{value};
      const auto chunked = std::find_if(codings.begin(), codings.end(),
                                        [](const auto& c) { return boost::beast::iequals(c, "chunked"); });
      if (chunked != codings.end() && std::next(chunked) == codings.end()) {
        chunked_ = true;
        length_ = 0;
      }
      return;
    }
    default: return;
  }
}

// Content-Length: a number, or a list of the same number (RFC 9110 8.6); a second field must agree.
void BackendParser::apply_content_length(std::string_view value, error_code& ec) {
  if (chunked_) {
    ec = http::error::bad_content_length;
    return;
  }
  std::uint64_t n = 0;
  if (!parse_decimal(value, n)) {
    // A list: each element the same number, no empty element uncounted.
    auto unread = 1 + std::count(value.begin(), value.end(), ',');
    const http::opt_token_list tokens{value};
    if (tokens.begin() == tokens.end() || !http::validate_list(tokens)) {
      ec = http::error::bad_content_length;
      return;
    }
    std::optional<std::uint64_t> seen;
    if (has_length_) seen = length0_;
    for (const auto& token : tokens) {
      std::uint64_t v = 0;
      if (!parse_decimal(token, v)) {
        ec = http::error::bad_content_length;
        return;
      }
      --unread;
      if (seen && *seen != v) {
        ec = http::error::multiple_content_length;
        return;
      }
      seen = v;
    }
    if (unread != 0) {
      ec = http::error::bad_content_length;
      return;
    }
    n = *seen;
  } else if (has_length_ && n != length0_) {
    ec = http::error::multiple_content_length;
    return;
  }
  has_length_ = true;
  length0_ = length_ = n;
}

// The head is whole: how the body is framed (RFC 9112 6.3).
void BackendParser::finish_head(error_code& ec) {
  const unsigned status = head_.status_;
  if (skip_body_ || status / 100 == 1 || status == 204 || status == 304) {
    state_ = State::kComplete;  // a Content-Length may be there: no body all the same
  } else if (has_length_) {
    state_ = length_ > 0 ? State::kLengthBody : State::kComplete;
  } else if (chunked_) {
    state_ = State::kChunkHeader;
  } else {
    need_eof_ = true;
    state_ = State::kBodyToEof;
  }
  ec = {};
}

// A chunk's size line (with the CRLF that ended the chunk before it), or the last chunk with its
// trailer fields and the final CRLF. Nothing is taken until the line (or the whole end) is there.
const char* BackendParser::parse_chunk_header(const char* p0, const char* last, error_code& ec) {
  const auto n = static_cast<std::size_t>(last - p0);
  const char* p = p0;
  const char* eol = nullptr;
  if (!final_chunk_) {
    if (expect_crlf_ && n >= 2 && p[0] == '\r' && p[1] == '\n') {
      // The CRLF that ends a chunk's data is taken at once (Beast kept it for the next chunk's size
      // line): a body relayed as it came reaches the client a whole chunk at a time, and a stream's
      // read costs no second pass for two bytes (issue 43).
      expect_crlf_ = false;
      resume_ = 0;
      return p0 + 2;
    }
    if (n < resume_ + 2) {
      ec = http::error::need_more;
      return p0;
    }
    if (expect_crlf_) {
      if (p[0] != '\r' || p[1] != '\n') {
        ec = http::error::bad_chunk;
        return p0;
      }
      p += 2;
    }
    eol = find_line_end(p0 + resume_, last, ec);
    if (ec) return p0;
    if (eol == nullptr) {
      ec = http::error::need_more;
      resume_ = n - 1;
      return p0;
    }
    resume_ = static_cast<std::size_t>(eol - 2 - p0);
    std::uint64_t size = 0;
    if (!parse_hex(p, size)) {
      ec = http::error::bad_chunk;
      return p0;
    }
    if (size != 0) {
      if (*p != '\r') p = skip_chunk_extensions(p, last, ec);
      if (ec) return p0;
      if (p != eol - 2) {
        ec = http::error::bad_chunk_extension;
        return p0;
      }
      length_ = size;
      resume_ = 2;
      expect_crlf_ = true;
      state_ = State::kChunkBody;
      return eol;
    }
    final_chunk_ = true;
  } else {
    // The last chunk's line was read before; its end was not there yet.
    if (expect_crlf_) p += 2;
    while (hex_digit_value(*p) >= 0) ++p;
    eol = find_line_end(p, last, ec);
  }
  const char* const end = find_blank_line(p0 + resume_, last);
  if (end == nullptr) {
    resume_ = n - 3;
    ec = http::error::need_more;
    return p0;
  }
  p = skip_chunk_extensions(p, last, ec);
  if (ec) return p0;
  if (p != eol - 2) {
    ec = http::error::bad_chunk_extension;
    return p0;
  }
  parse_fields(eol, end, true, ec);
  if (ec) return p0;
  state_ = State::kComplete;
  return end;
}

// As Beast's buffer_body takes a body's bytes: as many as the buffer holds; need_buffer when it
// took fewer (or has no buffer).
std::size_t BackendParser::put_body(const char* p, std::size_t n, error_code& ec) {
  if (in_place_) {
    const std::size_t took = std::min(body_.size, n);
    if (took > 0) spans_.push_back(Span{p, took});
    body_.size -= took;
    if (took < n) ec = http::error::need_buffer;
    return took;
  }
  if (body_.data == nullptr) {
    ec = http::error::need_buffer;
    return 0;
  }
  const std::size_t took = std::min(body_.size, n);
  if (took > 0) std::memcpy(body_.data, p, took);
  body_.data = static_cast<char*>(body_.data) + took;
  body_.size -= took;
  if (took < n) ec = http::error::need_buffer;
  return took;
}

}  // namespace mpo::proxy
