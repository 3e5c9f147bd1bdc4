// The implementation of present/page.hpp. The HTML pages' frame (pure): one stylesheet, a header
// that says what was measured, when, against what, and whether the evidence holds for claims;
// sections with a table of contents; rendered tables.
#include "present/page.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/text.hpp"

namespace mpo::present {
namespace {

constexpr const char* kStyle = R"(
:root{--ink:#1d2330;--muted:#5b6475;--line:#d9dee7;--bg:#fff;--soft:#f5f7fa;--ok:#1b7f3b;--bad:#b00020}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg);margin:0}
main{max-width:1180px;margin:0 auto;padding:24px 28px 64px}
header.page{padding-bottom:6px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 8px;padding-top:8px;border-top:1px solid var(--line)}
h3{font-size:16px;margin:20px 0 6px}
.measured{color:var(--muted);margin:2px 0 10px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0;font-size:14px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.verdict{display:inline-block;font-weight:600;padding:4px 12px;border-radius:14px;margin:6px 0}
.verdict.valid{background:#e3f4e8;color:var(--ok)}.verdict.invalid{background:#fde7ea;color:var(--bad)}
.warnings li{color:#8a5300}
nav.contents{font-size:14px;margin:10px 0}nav.contents a{margin-right:14px;color:#1f5fbf;text-decoration:none}
table{border-collapse:collapse;margin:10px 0 16px;font-size:13.5px}
caption{text-align:left;font-weight:600;padding:4px 0;color:var(--muted)}
th,td{border-bottom:1px solid var(--line);padding:5px 10px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}td.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:hover{background:#f0f4fb}tr.worse td{background:#fde7ea}tr.better td{background:#e3f4e8}
.table-wrap{overflow-x:auto}
figure.chart{display:inline-block;margin:8px 12px 16px 0;vertical-align:top}
figure.chart figcaption{font-weight:600;font-size:14px;margin-bottom:2px}
figure.chart svg{background:#fff;border:1px solid var(--line);border-radius:4px}
.grid line{stroke:#eceff4;stroke-width:1}.frame{stroke:#5b6475;stroke-width:1}.tick-mark{stroke:#5b6475}
.tick{font-size:11px;fill:#5b6475}.axis-label{font-size:12px;fill:#1d2330}
.legend text{font-size:12px;fill:#1d2330}.rule-label{font-size:11px}.no-data{font-size:13px;fill:#5b6475}
.chart-note{font-size:12.5px;color:var(--muted);max-width:740px;margin:4px 0 0}
p.note{color:var(--muted);font-size:13.5px}
)";

bool numeric_cell(std::string_view s) {
  if (s.empty()) return false;
  std::string t(s);
  char* end = nullptr;
  std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return false;
  // A number, then at most a short unit ("ms", "%", "tok/s", "x").
  const std::string_view rest(end);
  return rest.size() <= 6 && (rest.empty() || rest[0] == ' ' || rest[0] == '%' || std::isalpha(rest[0]));
}

std::string slug(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "section" : out;
}

}  // namespace

Table& Table::row(std::vector<std::string> cells, std::string row_class) {
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
  row_classes_.push_back(std::move(row_class));
  return *this;
}

std::string Table::html(std::string_view css_class) const {
  std::string o = css_class.empty() ? std::string(R"(<div class="table-wrap"><table>)")
                                    : fmt::format(R"(<div class="table-wrap"><table class="{}">)", css_class);
  if (!caption_.empty()) o += fmt::format("<caption>{}</caption>", html_escape(caption_));
  o += "<thead><tr>";
  for (const auto& h : headers_) o += fmt::format("<th>{}</th>", html_escape(h));
  o += "</tr></thead><tbody>";
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    o += row_classes_[i].empty() ? std::string("<tr>") : fmt::format(R"(<tr class="{}">)", row_classes_[i]);
    for (const auto& c : rows_[i]) o += (numeric_cell(c) ? R"(<td class="num">)" : "<td>") + html_escape(c) + "</td>";
    o += "</tr>";
  }
  return o + "</tbody></table></div>";
}

Page& Page::section(std::string title, std::string html, std::string id) {
  std::string base = id.empty() ? slug(title) : id;
  std::string unique = base;
  for (int n = 2; std::find(ids_.begin(), ids_.end(), unique) != ids_.end(); ++n)
    unique = fmt::format("{}-{}", base, n);
  ids_.push_back(unique);
  sections_.emplace_back(std::move(title), std::move(html));
  return *this;
}

std::string Page::html() const {
  std::string o = fmt::format(
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{}</style></head><body><main>",
      html_escape(header_.title), kStyle);
  o += fmt::format(R"(<header class="page"><h1>{}</h1>)", html_escape(header_.title));
  if (!header_.measured.empty()) o += fmt::format(R"(<p class="measured">{}</p>)", html_escape(header_.measured));
  if (header_.verdict) {
    const auto& v = *header_.verdict;
    o += fmt::format(R"(<div class="verdict {}">{}</div>)", v.valid ? "valid" : "invalid", html_escape(v.label));
    if (!v.reasons.empty()) o += bullets(v.reasons);
  }
  if (!header_.facts.empty()) o += facts(header_.facts);
  if (!header_.warnings.empty()) {
    o += R"(<ul class="warnings">)";
    for (const auto& w : header_.warnings) o += fmt::format("<li>{}</li>", html_escape(w));
    o += "</ul>";
  }
  if (sections_.size() > 1) {
    o += R"(<nav class="contents">)";
    for (std::size_t i = 0; i < sections_.size(); ++i)
      o += fmt::format(R"(<a href="#{}">{}</a>)", ids_[i], html_escape(sections_[i].first));
    o += "</nav>";
  }
  o += "</header>";
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    o += fmt::format(R"(<section id="{}"><h2>{}</h2>{}</section>)", ids_[i], html_escape(sections_[i].first),
                     sections_[i].second);
  }
  return o + "</main></body></html>\n";
}

std::string paragraph(std::string_view text, std::string_view css_class) {
  return css_class.empty() ? fmt::format("<p>{}</p>", html_escape(text))
                           : fmt::format(R"(<p class="{}">{}</p>)", css_class, html_escape(text));
}

std::string bullets(const std::vector<std::string>& items) {
  if (items.empty()) return {};
  std::string o = "<ul>";
  for (const auto& i : items) o += fmt::format("<li>{}</li>", html_escape(i));
  return o + "</ul>";
}

std::string heading(std::string_view text, int level) {
  return fmt::format("<h{0}>{1}</h{0}>", level, html_escape(text));
}

std::string facts(const std::vector<std::pair<std::string, std::string>>& items) {
  if (items.empty()) return {};
  std::string o = R"(<dl class="facts">)";
  for (const auto& [k, v] : items) o += fmt::format("<dt>{}</dt><dd>{}</dd>", html_escape(k), html_escape(v));
  return o + "</dl>";
}

std::string cell(std::optional<double> v, int digits) { return v ? fmt::format("{:.{}f}", *v, digits) : "n/a"; }

}  // namespace mpo::present
