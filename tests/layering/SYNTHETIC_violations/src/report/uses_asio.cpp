// SYNTHETIC: a pure file that includes Asio (the layering check must refuse it).
#include <boost/asio/io_context.hpp>
