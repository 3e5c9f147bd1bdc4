// How a response reads through proxy/backend_parser.hpp and through Beast's own response parser
// with a buffer_body, fed as the relay feeds them: `step` bytes at a time, into a body buffer of
// `room` bytes, the connection's end after the last byte. Shared by the differential test
// (tests/proxy/backend_parser_test.cpp) and the fuzz target (fuzz_backend_parser.cpp).
#pragma once

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/backend_parser.hpp"

namespace mpo::proxy::reading {

// What a parser made of a response: its head as it stood once whole (trailer fields are not the
// head's), its framing, the body bytes it gave and how it ended.
struct Reading {
  bool header_done = false, done = false;
  unsigned status = 0, version = 0;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<int> ids;
  bool chunked = false, keep_alive = false, has_length = false;
  std::uint64_t length = 0;
  std::string body, error;
  bool operator==(const Reading&) const = default;
};

// Fields of one name together, where the first of that name came (in any casing): the order Beast's
// fields container iterates in (it puts a field after the last of its name). The proxy keeps the
// order they came in, as nginx forwards them; the comparison is of what was read.
inline void group_by_name(Reading& r) {
  std::vector<std::string> names;  // lower case, in order of first appearance
  std::vector<std::size_t> group(r.fields.size());
  for (std::size_t i = 0; i < r.fields.size(); ++i) {
    std::string name = r.fields[i].first;
    for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    const auto at = std::find(names.begin(), names.end(), name);
    group[i] = static_cast<std::size_t>(at - names.begin());
    if (at == names.end()) names.push_back(std::move(name));
  }
  std::vector<std::size_t> order(r.fields.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return group[a] < group[b]; });
  auto fields = r.fields;
  auto ids = r.ids;
  for (std::size_t i = 0; i < order.size(); ++i) {
    r.fields[i] = fields[order[i]];
    r.ids[i] = ids[order[i]];
  }
}

// With `in_place` (ours only), the body is read where the parser leaves it (its spans), not copied.
template <class Parser, class HeadOf, class BodyOf>
Reading read_with(Parser& p, std::string_view response, std::size_t step, std::size_t room, bool head_request,
                  HeadOf head_of, BodyOf body_of, bool in_place = false) {
  namespace http = boost::beast::http;
  Reading r;
  p.header_limit(64 * 1024);
  if constexpr (requires { p.body_limit(boost::none); }) p.body_limit(boost::none);  // Beast's: no limit
  p.skip(head_request);
  if constexpr (requires { p.body_in_place(true); }) p.body_in_place(in_place);
  std::string buf(room, '\0');
  std::size_t at = 0, have = std::min(response.size(), step);  // taken by the parser, and given so far
  boost::system::error_code ec;
  while (!p.is_done() && !ec) {
    body_of(p).data = buf.data();
    body_of(p).size = room;
    const std::size_t used = p.put(boost::asio::buffer(response.data() + at, have - at), ec);
    at += used;
    const std::size_t got = room - body_of(p).size;
    if constexpr (requires { p.body_spans(); }) {
      if (in_place) {
        std::size_t spanned = 0;
        for (const auto& s : p.body_spans()) {
          r.body.append(s.data, s.size);
          spanned += s.size;
        }
        p.clear_body_spans();
        if (spanned != got) r.error = "spans and the body's count differ";
      } else {
        r.body.append(buf.data(), got);
      }
    } else {
      r.body.append(buf.data(), got);
    }
    if (p.is_header_done() && !r.header_done) {
      r.header_done = true;
      const auto& h = head_of(p);
      r.status = h.result_int();
      r.version = h.version();
      for (const auto& f : h) {
        r.fields.emplace_back(std::string(f.name_string()), std::string(f.value()));
        r.ids.push_back(static_cast<int>(f.name()));
      }
      r.has_length = h.has_content_length();
      r.chunked = p.chunked();
      r.length = p.content_length().value_or(0);
    }
    if (ec == http::error::need_more || ec == http::error::need_buffer) ec = {};
    if (used > 0 || got > 0) continue;
    if (have == response.size()) {  // all given, nothing more taken: the end of the connection
      // (An error stands; Beast's parser may not be told of an end before it had a byte.)
      if (!p.is_done() && !ec && p.got_some()) p.put_eof(ec);
      break;
    }
    have = std::min(response.size(), have + step);
  }
  if (r.error.empty()) r.error = ec.message();
  r.done = p.is_done();
  if (r.header_done) r.keep_alive = p.keep_alive();
  group_by_name(r);
  return r;
}

inline Reading read_ours(std::string_view response, std::size_t step, std::size_t room, bool head_request,
                         bool in_place = false) {
  BackendParser p;
  return read_with(
      p, response, step, room, head_request, [](BackendParser& q) -> const BackendHead& { return q.head(); },
      [](BackendParser& q) -> BackendParser::Body& { return q.body(); }, in_place);
}

inline Reading read_beasts(std::string_view response, std::size_t step, std::size_t room, bool head_request) {
  boost::beast::http::response_parser<boost::beast::http::buffer_body> p;
  return read_with(
      p, response, step, room, head_request, [](auto& q) -> const auto& { return q.get(); },
      [](auto& q) -> auto& { return q.get().body(); });
}

}  // namespace mpo::proxy::reading
