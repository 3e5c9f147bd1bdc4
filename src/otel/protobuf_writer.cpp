// The implementation of otel/protobuf_writer.hpp. The protobuf wire format
// (https://protobuf.dev/programming-guides/encoding/), writing side only: enough for OTLP request
// bodies.
#include "otel/protobuf_writer.hpp"

#include <bit>

namespace mpo::otel {

void ProtoWriter::raw_varint(std::uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void ProtoWriter::raw_fixed64(std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));  // little-endian
}

void ProtoWriter::tag(std::uint32_t field, unsigned wire_type) {
  raw_varint((static_cast<std::uint64_t>(field) << 3) | wire_type);
}

void ProtoWriter::varint(std::uint32_t field, std::uint64_t v) {
  tag(field, 0);
  raw_varint(v);
}

void ProtoWriter::fixed64(std::uint32_t field, std::uint64_t v) {
  tag(field, 1);
  raw_fixed64(v);
}

void ProtoWriter::fixed32(std::uint32_t field, std::uint32_t v) {
  tag(field, 5);
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void ProtoWriter::dbl(std::uint32_t field, double v) { fixed64(field, std::bit_cast<std::uint64_t>(v)); }

void ProtoWriter::bytes(std::uint32_t field, std::string_view v) {
  tag(field, 2);
  raw_varint(v.size());
  out_.append(v);
}

void ProtoWriter::packed_fixed64(std::uint32_t field, std::span<const std::uint64_t> v) {
  if (v.empty()) return;
  tag(field, 2);
  raw_varint(v.size() * 8);
  for (auto x : v) raw_fixed64(x);
}

void ProtoWriter::packed_double(std::uint32_t field, std::span<const double> v) {
  if (v.empty()) return;
  tag(field, 2);
  raw_varint(v.size() * 8);
  for (auto x : v) raw_fixed64(std::bit_cast<std::uint64_t>(x));
}

}  // namespace mpo::otel
