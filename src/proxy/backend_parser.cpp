// The implementation of proxy/backend_parser.hpp: Beast's parser callbacks, as http::parser with
// buffer_body implements them (boost/beast/http/parser.hpp, buffer_body.hpp), but for the fields.
#include "proxy/backend_parser.hpp"

#include <algorithm>
#include <cstring>

namespace mpo::proxy {

BackendHead::const_iterator BackendHead::find(http::field id) const {
  return std::find_if(fields_->begin(), fields_->end(), [id](const BackendField& f) { return f.name() == id; });
}

void BackendParser::on_response_impl(int code, boost::beast::string_view, int version, boost::beast::error_code& ec) {
  head_.status_ = static_cast<unsigned>(code);
  head_.version_ = static_cast<unsigned>(version);
  ec = {};
}

void BackendParser::on_field_impl(http::field name, boost::beast::string_view name_string,
                                  boost::beast::string_view value, boost::beast::error_code& ec) {
  if (bytes_->empty()) {
    bytes_->reserve(512);
    offsets_->reserve(16);
  }
  const std::size_t name_at = bytes_->size();
  bytes_->append(name_string.data(), name_string.size());
  const std::size_t value_at = bytes_->size();
  bytes_->append(value.data(), value.size());
  offsets_->push_back({name, name_at, name_string.size(), value_at, value.size()});
  if (name == http::field::content_length) head_.content_length_field_ = true;
  ec = {};
}

void BackendParser::on_header_impl(boost::beast::error_code& ec) {
  // The head is whole: bytes_ grows no more, and the fields' views are made once.
  const std::string_view all = *bytes_;
  head_.fields_->reserve(offsets_->size());
  for (const auto& o : *offsets_) {
    head_.fields_->emplace_back(o.id, all.substr(o.name_at, o.name_size), all.substr(o.value_at, o.value_size));
  }
  ec = {};
}

void BackendParser::on_body_init_impl(const boost::optional<std::uint64_t>&, boost::beast::error_code& ec) { ec = {}; }

// buffer_body's reader::put: as much as the buffer takes; need_buffer when it took less.
std::size_t BackendParser::put_body(boost::beast::string_view bytes, boost::beast::error_code& ec) {
  if (body_.data == nullptr) {
    ec = http::error::need_buffer;
    return 0;
  }
  const std::size_t n = std::min(body_.size, bytes.size());
  if (n > 0) std::memcpy(body_.data, bytes.data(), n);
  body_.data = static_cast<char*>(body_.data) + n;
  body_.size -= n;
  if (n == bytes.size()) {
    ec = {};
  } else {
    ec = http::error::need_buffer;
  }
  return n;
}

std::size_t BackendParser::on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) {
  return put_body(body, ec);
}

void BackendParser::on_chunk_header_impl(std::uint64_t, boost::beast::string_view, boost::beast::error_code& ec) {
  ec = {};
}

std::size_t BackendParser::on_chunk_body_impl(std::uint64_t, boost::beast::string_view body,
                                              boost::beast::error_code& ec) {
  return put_body(body, ec);
}

void BackendParser::on_finish_impl(boost::beast::error_code& ec) { ec = {}; }

}  // namespace mpo::proxy
