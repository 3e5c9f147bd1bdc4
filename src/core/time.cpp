// The implementation of core/time.hpp. RFC 3339 timestamps with microseconds, always UTC ("Z") on
// output.
#include "core/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/text.hpp"

namespace mpo {
namespace {

// Howard Hinnant's days_from_civil / civil_from_days (public domain algorithms).
constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

struct Civil {
  std::int64_t y;
  unsigned m;
  unsigned d;
};

constexpr Civil civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2), m, d};
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(std::int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

std::size_t write_rfc3339_us(char (&out)[48], std::int64_t unix_us) {
  const std::int64_t second = floor_div(unix_us, 1'000'000);
  const auto us = static_cast<std::uint32_t>(unix_us - second * 1'000'000);
  // The text up to the second's point is the last call's on this thread, most of the time: a ledger
  // line's two or three times fall within one second, and so do its neighbours' (issue 43).
  thread_local std::int64_t last_second = std::numeric_limits<std::int64_t>::min();
  thread_local char last_text[20];  // "YYYY-MM-DDTHH:MM:SS."
  if (second != last_second) {
    const std::int64_t days = floor_div(second, 86'400);
    const auto in_day = static_cast<std::uint32_t>(second - days * 86'400);
    const std::uint32_t hh = in_day / 3600, mm = in_day / 60 % 60, ss = in_day % 60;
    // And the date's is the last second's, nearly always (the civil date's divisions were half of
    // a timestamp's cost).
    thread_local std::int64_t last_days = std::numeric_limits<std::int64_t>::min();
    thread_local char last_date[11];  // "YYYY-MM-DDT"
    if (days != last_days) {
      const Civil c = civil_from_days(days);
      if (c.y < 0 || c.y > 9999) {
        const auto written = fmt::format_to_n(out, sizeof out, "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", c.y, c.m,
                                              c.d, hh, mm, ss, us);
        return std::min(written.size, sizeof out);
      }
      const auto year = static_cast<std::uint32_t>(c.y);
      write_two_digits(last_date, year / 100);
      write_two_digits(last_date + 2, year % 100);
      last_date[4] = '-';
      write_two_digits(last_date + 5, c.m);
      last_date[7] = '-';
      write_two_digits(last_date + 8, c.d);
      last_date[10] = 'T';
      last_days = days;
    }
    std::memcpy(last_text, last_date, 11);
    write_two_digits(last_text + 11, hh);
    last_text[13] = ':';
    write_two_digits(last_text + 14, mm);
    last_text[16] = ':';
    write_two_digits(last_text + 17, ss);
    last_text[19] = '.';
    last_second = second;
  }
  std::memcpy(out, last_text, 20);
  write_two_digits(out + 20, us / 10'000);
  write_two_digits(out + 22, us / 100 % 100);
  write_two_digits(out + 24, us % 100);
  out[26] = 'Z';
  return 27;
}

std::string format_rfc3339_us(std::int64_t unix_us) {
  char out[48];
  return std::string(out, write_rfc3339_us(out, unix_us));
}

namespace {

// The form every ledger line of ours carries, "2026-08-27T10:00:00.123456Z", read in one go; false
// for anything else (which the general parser then reads, or rejects with its reason).
bool parse_canonical_us(std::string_view t, std::int64_t& out) {
  if (t.size() != 27 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t[19] != '.' ||
      t[26] != 'Z') {
    return false;
  }
  constexpr int kDigitAt[] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22, 23, 24, 25};
  unsigned bad = 0;
  for (int i : kDigitAt)
    bad |= static_cast<unsigned>(static_cast<unsigned char>(t[static_cast<std::size_t>(i)] - '0')) > 9 ? 1u : 0u;
  if (bad) return false;
  auto num = [&t](std::size_t at, std::size_t n) {
    std::int64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) v = v * 10 + (t[at + k] - '0');
    return v;
  };
  const std::int64_t year = num(0, 4), month = num(5, 2), day = num(8, 2), hour = num(11, 2), minute = num(14, 2),
                     second = num(17, 2);
  if (year < 1 || month < 1 || month > 12 || day < 1 ||
      static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month)) || hour > 23 || minute > 59 ||
      second > 59) {
    return false;  // the general parser says what is out of range (and clamps a leap second)
  }
  const std::int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  out = (days * 86400 + hour * 3600 + minute * 60 + second) * 1'000'000 + num(20, 6);
  return true;
}

}  // namespace

Result<std::int64_t> parse_rfc3339(std::string_view t) {
  if (std::int64_t us = 0; parse_canonical_us(t, us)) return us;
  auto bad = [&](std::string_view why) {
    return make_error(errc::kRfc3339Syntax, fmt::format("invalid RFC 3339 timestamp '{}': {} (expected e.g. "
                                                        "2026-08-27T10:00:00Z)",
                                                        t.substr(0, 64), why));
  };
  std::size_t i = 0;
  auto digits = [&](std::size_t n, int& out) -> bool {
    if (i + n > t.size()) return false;
    int v = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const char c = t[i + k];
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    i += n;
    out = v;
    return true;
  };
  auto expect = [&](auto pred) -> bool {
    if (i >= t.size() || !pred(t[i])) return false;
    ++i;
    return true;
  };
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(4, year) || !expect([](char c) { return c == '-'; }) || !digits(2, month) ||
      !expect([](char c) { return c == '-'; }) || !digits(2, day)) {
    return bad("date part");
  }
  if (!expect([](char c) { return c == 'T' || c == 't' || c == ' '; })) return bad("missing 'T'");
  if (!digits(2, hour) || !expect([](char c) { return c == ':'; }) || !digits(2, minute) ||
      !expect([](char c) { return c == ':'; }) || !digits(2, second)) {
    return bad("time part");
  }
  std::int64_t frac_us = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    std::size_t n = 0;
    std::int64_t scale = 100000;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') {
      if (n < 6) {
        frac_us += (t[i] - '0') * scale;
        scale /= 10;
      }
      ++i;
      ++n;
    }
    if (n == 0) return bad("empty fraction");
  }
  std::int64_t offset_s = 0;
  if (i < t.size() && (t[i] == 'Z' || t[i] == 'z')) {
    ++i;
  } else if (i < t.size() && (t[i] == '+' || t[i] == '-')) {
    const int sign = t[i] == '-' ? -1 : 1;
    ++i;
    int oh = 0, om = 0;
    if (!digits(2, oh) || !expect([](char c) { return c == ':'; }) || !digits(2, om) || oh > 23 || om > 59) {
      return bad("offset");
    }
    offset_s = sign * (oh * 3600 + om * 60);
  } else {
    return bad("missing offset ('Z' or +hh:mm)");
  }
  if (i != t.size()) return bad("trailing characters");
  if (year < 1 || month < 1 || month > 12 || day < 1 ||
      static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month)) || hour > 23 || minute > 59 ||
      second > 60) {
    return make_error(errc::kRfc3339Range, fmt::format("timestamp '{}' is out of range", t));
  }
  if (second == 60) second = 59;  // leap second: clamp, Unix time has none
  const std::int64_t days = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const std::int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  return secs * 1'000'000 + frac_us;
}

}  // namespace mpo
