// Typed reads and writes of a receipt's JSON members, for the typed structs of a sweep receipt
// (serving_stats, point_evidence). Reads: a missing or null member leaves the field as it is; a member of
// the wrong type records the first error, naming the member by its path ("stats.ttft_ms.p99").
// Pure.
#pragma once

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/result.hpp"

namespace mpo::sweep {

class JsonReader {
 public:
  JsonReader(const boost::json::object& o, std::string where) : o_(o), where_(std::move(where)) {}

  const std::string& error() const { return error_; }
  bool ok() const { return error_.empty(); }
  // A reader of a nested object member (nullptr when absent; an error when not an object).
  const boost::json::object* object(std::string_view key) {
    const auto* v = find(key);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) fail(key, "an object");
    return v->if_object();
  }
  // A nested array member (nullptr when absent; an error when not an array).
  const boost::json::array* array(std::string_view key) {
    const auto* v = find(key);
    if (v == nullptr) return nullptr;
    if (!v->is_array()) fail(key, "an array");
    return v->if_array();
  }
  std::string path(std::string_view key) const { return where_ + "." + std::string(key); }
  void fail_at(const std::string& where, std::string_view what) {
    if (error_.empty()) error_ = fmt::format("{} is not {}", where, what);
  }
  // Takes a nested reader's first error as this one's.
  void adopt(const JsonReader& nested) {
    if (error_.empty()) error_ = nested.error_;
  }

  void read(std::string_view key, std::string& out) {
    if (const auto* v = find(key)) {
      if (v->is_string())
        out = std::string(v->get_string());
      else
        fail(key, "a string");
    }
  }
  void read(std::string_view key, std::optional<std::string>& out) {
    if (find(key)) {
      std::string s;
      read(key, s);
      out = std::move(s);
    }
  }
  void read(std::string_view key, std::optional<double>& out) {
    if (const auto* v = find(key)) {
      if (v->is_number())
        out = v->to_number<double>();
      else
        fail(key, "a number");
    }
  }
  void read(std::string_view key, std::optional<std::int64_t>& out) { read_integer(key, out, "an integer"); }
  void read(std::string_view key, std::optional<std::uint64_t>& out) { read_integer(key, out, "an unsigned integer"); }
  // A plain (not optional) number or flag: set only when present.
  template <class T>
  requires std::is_arithmetic_v<T>
  void read(std::string_view key, T& out) {
    std::optional<T> v;
    read(key, v);
    if (v) out = *v;
  }
  void read(std::string_view key, std::vector<std::string>& out) {
    if (const auto* v = find(key)) {
      const auto* a = v->if_array();
      if (a == nullptr) return fail(key, "an array of strings");
      out.clear();
      for (const auto& e : *a) {
        if (!e.is_string()) return fail(key, "an array of strings");
        out.emplace_back(e.get_string());
      }
    }
  }
  void read(std::string_view key, std::optional<bool>& out) {
    if (const auto* v = find(key)) {
      if (v->is_bool())
        out = v->get_bool();
      else
        fail(key, "true or false");
    }
  }

 private:
  // An integer member in range of I (a JSON integer only: 2.0 or 1.5 is not one).
  template <class I>
  void read_integer(std::string_view key, std::optional<I>& out, std::string_view what) {
    if (const auto* v = find(key)) {
      if (v->is_int64() || v->is_uint64()) {
        boost::system::error_code ec;
        const I n = v->to_number<I>(ec);
        if (!ec) {
          out = n;
          return;
        }
      }
      fail(key, what);
    }
  }
  const boost::json::value* find(std::string_view key) const {
    const auto* v = o_.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  void fail(std::string_view key, std::string_view what) {
    if (error_.empty()) error_ = fmt::format("{} is not {}", path(key), what);
  }

  const boost::json::object& o_;
  std::string where_;
  std::string error_;
};

// A struct read and written member by member declares its members once, in order, as
//   constexpr auto json_fields(const S*) { return std::tuple{field("a", &S::a), field("b", &S::b)}; }
// in namespace mpo::sweep (found by argument-dependent lookup); write_fields and read_fields walk
// that list. Optional members are written only when set; a nested struct with its own list is a
// nested object; a member type with an overload of write_member/read_member of its own (declared
// before use) is written and read by it.
template <class S, class T, bool OmitEmpty = false>
struct Field {
  std::string_view name;
  T S::*member;
  static constexpr bool kOmitEmpty = OmitEmpty;
};
template <class S, class T>
constexpr Field<S, T> field(std::string_view name, T S::*member) {
  return {name, member};
}
// A member written only when not empty (a string, a list): receipts that have always left an
// unset string out keep doing so. Read as any other member.
template <class S, class T>
constexpr Field<S, T, true> field_omit_empty(std::string_view name, T S::*member) {
  return {name, member};
}

template <class T>
concept HasJsonFields = requires(const T* p) {
  json_fields(p);
};

template <HasJsonFields S>
void write_fields_into(boost::json::object& o, const S& s);

inline void write_member(boost::json::object& o, std::string_view key, const std::map<std::string, std::int64_t>& m) {
  boost::json::object nested;
  for (const auto& [k, v] : m) nested[k] = v;
  o[key] = std::move(nested);
}
inline void write_member(boost::json::object& o, std::string_view key, const std::vector<std::string>& v) {
  boost::json::array a;
  for (const auto& e : v) a.emplace_back(e);
  o[key] = std::move(a);
}
template <class T>
void write_member(boost::json::object& o, std::string_view key, const T& v) {
  if constexpr (HasJsonFields<T>) {
    boost::json::object nested;
    write_fields_into(nested, v);
    o[key] = std::move(nested);
  } else {
    o[key] = v;
  }
}
template <class T>
void write_member(boost::json::object& o, std::string_view key, const std::optional<T>& v) {
  if (v) write_member(o, key, *v);
}

template <HasJsonFields S>
void write_member(boost::json::object& o, std::string_view key, const std::vector<S>& v) {
  boost::json::array a;
  for (const auto& e : v) {
    boost::json::object nested;
    write_fields_into(nested, e);
    a.emplace_back(std::move(nested));
  }
  o[key] = std::move(a);
}

template <class S, class T, bool OmitEmpty>
void write_field(boost::json::object& o, const Field<S, T, OmitEmpty>& f, const S& s) {
  if constexpr (OmitEmpty) {
    if ((s.*(f.member)).empty()) return;
  }
  write_member(o, f.name, s.*(f.member));
}

template <HasJsonFields S>
void write_fields_into(boost::json::object& o, const S& s) {
  std::apply([&](const auto&... f) { (write_field(o, f, s), ...); }, json_fields(&s));
}

template <HasJsonFields S>
void read_fields(JsonReader& r, S& s);

template <class T>
requires requires(JsonReader& r, std::string_view k, T& t) { r.read(k, t); }
void read_member(JsonReader& r, std::string_view key, T& out) { r.read(key, out); }
template <HasJsonFields S>
void read_member(JsonReader& r, std::string_view key, S& out) {
  if (const auto* m = r.object(key)) {
    JsonReader nested(*m, r.path(key));
    read_fields(nested, out);
    r.adopt(nested);
  }
}
template <HasJsonFields S>
void read_member(JsonReader& r, std::string_view key, std::optional<S>& out) {
  if (r.object(key) != nullptr) read_member(r, key, out.emplace());
}
template <HasJsonFields S>
void read_member(JsonReader& r, std::string_view key, std::vector<S>& list) {
  const auto* a = r.array(key);
  if (a == nullptr) return;
  list.clear();
  for (std::size_t i = 0; i < a->size(); ++i) {
    const auto* e = (*a)[i].if_object();
    const std::string where = r.path(key) + "[" + std::to_string(i) + "]";
    if (e == nullptr) return r.fail_at(where, "an object");
    JsonReader nested(*e, where);
    read_fields(nested, list.emplace_back());
    r.adopt(nested);
  }
}
template <HasJsonFields S>
void read_member(JsonReader& r, std::string_view key, std::optional<std::vector<S>>& out) {
  if (r.array(key) != nullptr) read_member(r, key, out.emplace());
}
inline void read_member(JsonReader& r, std::string_view key, std::optional<boost::json::object>& out) {
  if (const auto* m = r.object(key)) out = *m;
}
inline void read_member(JsonReader& r, std::string_view key, std::optional<std::map<std::string, std::int64_t>>& out) {
  if (const auto* m = r.object(key)) {
    JsonReader nested(*m, r.path(key));
    auto& counts = out.emplace();
    for (const auto& [k, v] : *m) nested.read(k, counts[std::string(k)]);
    r.adopt(nested);
  }
}

template <HasJsonFields S>
void read_fields(JsonReader& r, S& s) {
  std::apply([&](const auto&... f) { (read_member(r, f.name, s.*(f.member)), ...); }, json_fields(&s));
}

// The members of `o` whose names are not in the field list of S, as written.
template <HasJsonFields S>
boost::json::object unknown_members(const boost::json::object& o, const S* s) {
  boost::json::object out;
  for (const auto& member : o) {
    const std::string_view name = member.key();
    bool named = false;
    std::apply([&](const auto&... f) { ((named = named || f.name == name), ...); }, json_fields(s));
    if (!named) out[member.key()] = member.value();
  }
  return out;
}

// A struct with an `unknown` member (the members of a read document it does not name): written
// with those last, and read keeping them. `where` names the struct in errors ("stats").
template <HasJsonFields S>
boost::json::object write_with_unknown(const S& s) {
  boost::json::object o;
  write_fields_into(o, s);
  for (const auto& member : s.unknown) o[member.key()] = member.value();
  return o;
}
template <HasJsonFields S>
std::optional<std::string> read_with_unknown(const boost::json::object& o, std::string where, S& s) {
  JsonReader r(o, std::move(where));
  read_fields(r, s);
  if (!r.ok()) return r.error();
  s.unknown = unknown_members(o, &s);
  return std::nullopt;
}
// The same as a parser of its own: `code` is the error a member of the wrong type is.
template <HasJsonFields S>
Result<S> parse_with_unknown(const boost::json::object& o, std::string where, ErrorCode code) {
  S s;
  if (auto error = read_with_unknown(o, std::move(where), s)) return make_error(code, *error);
  return s;
}

// The members that open every receipt of fak's serving schemas (sweep and parity), in fak's order.
inline boost::json::object receipt_head(std::string_view schema, const std::string& generated_at,
                                        const std::string& machine_id, const std::string& model) {
  boost::json::object o;
  o["schema"] = schema;
  o["generated_at"] = generated_at;
  o["machine_id"] = machine_id;
  o["model"] = model;
  return o;
}

}  // namespace mpo::sweep
