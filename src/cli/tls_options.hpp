// The TLS options shared by every subcommand (--cacert, --cacertdir, --cert, --key, --insecure and
// their REDLOCK_* variables): declared in the option table, then checked and put into the Endpoint.
#pragma once

#include <map>
#include <set>
#include <string>

#include "cli/option_table.hpp"
#include "redis/redis_url.hpp"

namespace redlock {

struct TlsRawOptions {
    std::string cacert;
    std::string cacertdir;
    std::string cert;
    std::string key;
    bool insecure = false;
};

void add_tls_options(OptionTable& t, TlsRawOptions& o);

// Puts the options into a rediss:// endpoint and loads the files once, so that a missing or bad
// file is a usage error at start rather than a failed connection later. A TLS flag on the
// command line with a plain URL is a usage error too (the user meant TLS and would otherwise send
// the password in clear); the same setting from a REDLOCK_TLS_* variable is ignored there, since
// a crontab or a parent run may set it for other jobs. --insecure warns on stderr.
// `given` holds the long names of the options given on the command line, `from_env` those set
// from their variables (key -> variable), which a refusal names instead of the option.
void apply_tls_options(Endpoint& endpoint, const TlsRawOptions& o,
                       const std::set<std::string>& given,
                       const std::map<std::string, std::string>& from_env = {});

}  // namespace redlock
