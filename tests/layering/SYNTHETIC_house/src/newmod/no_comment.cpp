#include "core/result.hpp"

namespace mpo {
int synthetic_no_comment() { return 0; }
}  // namespace mpo
