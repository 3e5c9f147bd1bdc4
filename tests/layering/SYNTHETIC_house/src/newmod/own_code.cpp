// SYNTHETIC: an error code made where it is raised instead of in core/error_codes.hpp's table.
#include "core/result.hpp"

namespace mpo {
Error synthetic_own_code() { return make_error(ErrorCode{"made.up"}, "the house rules must refuse this"); }
}  // namespace mpo
