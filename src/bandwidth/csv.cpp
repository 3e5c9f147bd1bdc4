// The implementation of bandwidth/csv.hpp. CSV records as Nsight Compute writes them (RFC 4180:
// quoted fields, "" for a quote, newlines inside quotes, CRLF or LF), read from a given offset.
#include "bandwidth/csv.hpp"

#include <fmt/format.h>

namespace mpo::bandwidth {

Result<CsvRecord> read_csv_record(std::string_view text, std::size_t& pos, std::uint32_t& line) {
  CsvRecord r;
  r.line = ++line;
  std::string field;
  bool quoted = false;      // inside quotes
  bool was_quoted = false;  // this field began with a quote
  std::size_t i = pos;
  auto end_field = [&] {
    if (!was_quoted) {
      // Unquoted fields: leading and trailing blanks are not data (ncu never writes them).
      const auto b = field.find_first_not_of(" \t");
      const auto e = field.find_last_not_of(" \t");
      field = b == std::string::npos ? std::string() : field.substr(b, e - b + 1);
    }
    r.fields.push_back(std::move(field));
    field.clear();
    was_quoted = false;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        ++i;
        continue;
      }
      if (c == '\n') ++line;
      field += c;
      ++i;
      continue;
    }
    if (c == '"' && field.find_first_not_of(" \t") == std::string::npos) {
      field.clear();
      quoted = was_quoted = true;
      ++i;
      continue;
    }
    if (c == ',') {
      end_field();
      ++i;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++i;
      end_field();
      pos = i;
      return r;
    }
    field += c;
    ++i;
  }
  if (quoted) {
    return make_error(errc::kNcuCsv,
                      fmt::format("line {}: a quoted field is not closed before the end of the file", r.line));
  }
  end_field();
  pos = i;
  return r;
}

std::string normalize_column(std::string_view name) {
  if (name.starts_with("\xEF\xBB\xBF")) name.remove_prefix(3);
  const auto b = name.find_first_not_of(" \t\r\n");
  const auto e = name.find_last_not_of(" \t\r\n");
  std::string out = b == std::string_view::npos ? std::string() : std::string(name.substr(b, e - b + 1));
  for (char& ch : out) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  return out;
}

}  // namespace mpo::bandwidth
