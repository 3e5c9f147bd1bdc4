// SYNTHETIC: a module the graph does not name.
#include "core/result.hpp"
