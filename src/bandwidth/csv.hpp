// CSV records as Nsight Compute writes them (RFC 4180: quoted fields, "" for a quote, newlines
// inside quotes, CRLF or LF), read from a given offset. The bandwidth importer finds its header
// line first (application output before it need not be CSV) and reads whole records after it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace mpo::bandwidth {

struct CsvRecord {
  std::vector<std::string> fields;
  std::uint32_t line = 0;  // 1-based line where the record starts
};

// Reads one record starting at `pos` (which it advances past the record's line end). An
// unterminated quote is an error naming the line.
Result<CsvRecord> read_csv_record(std::string_view text, std::size_t& pos, std::uint32_t& line);

// Lower-cased, trimmed, without a UTF-8 byte-order mark: for comparing column names.
std::string normalize_column(std::string_view name);

}  // namespace mpo::bandwidth
