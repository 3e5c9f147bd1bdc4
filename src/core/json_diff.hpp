// Where two JSON documents differ, field by field: what `verify` commands use to name the first
// stated field that does not follow from a receipt's own contents, with the value written and the
// value re-derived. Arrays of objects can be matched by a label (a track's name, a point's
// coordinate) instead of by position, so a reordered or missing element is named, not its
// neighbour. Numbers and strings compare as Go's encoder writes them. Pure.
#pragma once

#include <boost/json/value.hpp>
#include <functional>
#include <string>
#include <vector>

namespace mpo {

struct JsonDifference {
  std::string path;     // "tracks[ours].valid_points", "points[concurrency 4].tracks[ours].stats.ok"
  std::string written;  // the value as written ("(absent)" when the field is missing)
  std::string derived;  // the value re-derived ("(absent)" when nothing may stand there)
};

struct JsonDiffOptions {
  // A label for an array element (an object) at `path`, used to match elements; "" matches by index.
  std::function<std::string(const std::string& path, const boost::json::object& element)> label;
  // Paths not compared (fields only one side can carry, such as our own additions to a fak
  // receipt). Called with the field's full path.
  std::function<bool(const std::string& path)> skip;
  // Fields written but not re-derived count as differences unless this is false (fak readers
  // ignore unknown fields; our own receipts carry nothing that is not derived).
  bool extra_written_fields_differ = true;
  std::size_t max_differences = 20;
};

// Differences between `written` and `derived`, in document order of `derived` (then the extra
// written fields), at most `max_differences`.
std::vector<JsonDifference> json_differences(const boost::json::value& written, const boost::json::value& derived,
                                             const JsonDiffOptions& options = {});

// "tracks[ours].valid_points: written 5, re-derived 4".
std::string describe(const JsonDifference& d);

}  // namespace mpo
