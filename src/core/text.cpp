// The implementation of core/text.hpp. Words about text a server sent back, for messages, and small
// text helpers.
#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace mpo {

std::string body_kind(std::string_view body) {
  const auto first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "an empty body";
  const std::string_view rest = body.substr(first);
  auto starts = [&](std::string_view p) {
    if (rest.size() < p.size()) return false;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(rest[i])) != p[i]) return false;
    }
    return true;
  };
  if (starts("<!doctype html") || starts("<html") || starts("<head") || starts("<body")) return "an HTML page";
  if (rest.front() == '{' || rest.front() == '[') return "JSON";
  std::string head(rest.substr(0, std::min<std::size_t>(rest.find('\n'), 40)));
  return fmt::format("text beginning '{}'", head);
}

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string_view trim_blanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

TextWriter& TextWriter::field_line(std::string_view name, std::string_view value) {
  char* p = room(name.size() + value.size() + 4);
  copy_bytes(p, name.data(), name.size());
  p += name.size();
  p[0] = ':';
  p[1] = ' ';
  copy_bytes(p + 2, value.data(), value.size());
  p += 2 + value.size();
  p[0] = '\r';
  p[1] = '\n';
  size_ += name.size() + value.size() + 4;
  return *this;
}

char* TextWriter::grow(std::size_t n) {
  out_->resize(std::max(out_->size() * 2, size_ + n));
  return out_->data() + size_;
}

}  // namespace mpo
