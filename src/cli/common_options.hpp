// The options every command takes, the run and the operator commands alike (-h, -V, which
// Redis, its passwords, timeouts, -v, TLS): declared in the option table, then checked into
// ConnectionOptions. Also the range-checked reading of a number or duration option's value.
#pragma once

#include <string>
#include <vector>

#include "cli/option_table.hpp"
#include "cli/scan.hpp"
#include "cli/tls_options.hpp"
#include "lock/quorum/options.hpp"
#include "util/clock.hpp"

namespace redlock {

// Option values exactly as given (flag or environment); validated afterwards so that every error
// names the option and says what is wrong. RawOptions (run_options_cli.hpp) adds the run's own.
struct CommonRawOptions {
    std::string url = "redis://127.0.0.1:6379";
    std::vector<std::string> urls;  // every -u (or REDLOCK_URL); several select the quorum mode
    std::string node_timeout = "50ms";
    std::string password_file;
    std::string prefix;
    std::string connect_timeout = "2s";
    std::string command_timeout = "2s";
    std::string sentinel_password_file;
    std::string sentinel_user;
    bool verbose = false;
    bool help = false;
    bool help_all = false;
    bool version = false;
    TlsRawOptions tls;
};

void add_common_options(OptionTable& t, CommonRawOptions& o);

// Throws UsageError naming `option`: a malformed duration, or a number outside min..max.
Millis duration_option(const std::string& text, const std::string& option);
int int_option(const std::string& text, const std::string& option, int min, int max);

// Reads the password files, loads the TLS files and checks the URLs (one, or a quorum of three or
// more). Throws UsageError naming the option.
ConnectionOptions connection_options(const CommonRawOptions& raw, const Scan& scan);

}  // namespace redlock
