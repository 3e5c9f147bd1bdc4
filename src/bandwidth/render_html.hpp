// A bandwidth or host-roofline receipt as a page (pure, src/present): the figure with its validity
// and what it rests on; per-kernel rates for an Nsight Compute capture; the threads-against-GB/s
// curve with its trials, the sustainable figure and the knee for a host roofline.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo::bandwidth {

// Any of modelperfobs.bandwidth.v1 (HBM or host sample) and modelperfobs.host-roofline.v1; an error
// that names what is wrong for another document.
Result<std::string> receipt_html(std::string_view receipt_json);

}  // namespace mpo::bandwidth
