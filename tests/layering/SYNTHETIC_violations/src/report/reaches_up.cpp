// SYNTHETIC: report reaching up into sweep (against the module graph).
#include "sweep/receipt.hpp"
