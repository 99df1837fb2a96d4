// The TLS options shared by every subcommand (--cacert, --cacertdir, --cert, --key, --insecure and
// their REDLOCK_* variables): registered with CLI11, then checked and put into the Endpoint.
#pragma once

#include <string>

#include "redis_url.hpp"

namespace CLI {
class App;
}

namespace redlock {

struct TlsRawOptions {
    std::string cacert;
    std::string cacertdir;
    std::string cert;
    std::string key;
    bool insecure = false;
};

void add_tls_options(CLI::App& app, TlsRawOptions& o);

// Puts the options into a rediss:// endpoint and loads the files once, so that a missing or bad
// file is a usage error at start rather than a failed connection later. TLS options with a
// plain URL are a usage error too: the user meant TLS and would otherwise send the password in
// clear. --insecure warns on stderr.
void apply_tls_options(Endpoint& endpoint, const TlsRawOptions& o);

}  // namespace redlock
