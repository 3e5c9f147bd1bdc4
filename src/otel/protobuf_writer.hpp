// The protobuf wire format (https://protobuf.dev/programming-guides/encoding/), writing side only:
// enough for OTLP request bodies. Pure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mpo::otel {

class ProtoWriter {
 public:
  void varint(std::uint32_t field, std::uint64_t v);    // int32/int64/uint64/bool/enum
  void fixed64(std::uint32_t field, std::uint64_t v);   // fixed64, sfixed64
  void fixed32(std::uint32_t field, std::uint32_t v);   // fixed32
  void dbl(std::uint32_t field, double v);              // double
  void bytes(std::uint32_t field, std::string_view v);  // bytes, string
  void message(std::uint32_t field, const ProtoWriter& m) { bytes(field, m.out_); }
  void packed_fixed64(std::uint32_t field, std::span<const std::uint64_t> v);
  void packed_double(std::uint32_t field, std::span<const double> v);

  const std::string& data() const { return out_; }
  std::string take() && { return std::move(out_); }

 private:
  void tag(std::uint32_t field, unsigned wire_type);
  void raw_varint(std::uint64_t v);
  void raw_fixed64(std::uint64_t v);
  std::string out_;
};

}  // namespace mpo::otel
