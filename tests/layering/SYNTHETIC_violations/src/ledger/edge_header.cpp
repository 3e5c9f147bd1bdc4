// SYNTHETIC: a pure file that includes an edge header.
#include "net/client.hpp"
