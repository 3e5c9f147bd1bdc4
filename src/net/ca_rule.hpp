// The one rule for trusting an https peer, shared by every client (net/client.hpp) and stated in
// the --help of every option that takes a CA file. Pure: no Asio here, so command-line code can
// include it cheaply.
#pragma once

namespace mpo::net {

// With no CA file: the system's CAs. With one: that PEM file instead (as curl --cacert). Either
// way the certificate chain is verified, SNI is sent, and the certificate must name the URL's host.
inline constexpr const char* kCaFileHelp =
    "PEM file of the CAs to trust for an https URL, instead of the system's (the certificate chain and the host name "
    "are always verified)";

}  // namespace mpo::net
