#include "cli/usage.hpp"

#include <fmt/format.h>

namespace redlock {
namespace {

constexpr const char* usage_text =
    "Usage: redlock-run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock-run [OPTIONS] NAME [OPTIONS] -- COMMAND [ARGS...]\n"
    "       redlock-run [OPTIONS] -c 'SHELL COMMAND' NAME\n"
    "       redlock-run run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock-run status [OPTIONS] [--json] NAME\n"
    "       redlock-run list [OPTIONS] [--json] [--last-runs] [PATTERN]\n"
    "       redlock-run list [OPTIONS] --names [PATTERN]\n"
    "       redlock-run release [OPTIONS] (--token TOKEN | --force) NAME\n"
    "       redlock-run history [OPTIONS] [--limit N] [--json] NAME\n"
    "\n"
    "Runs COMMAND while holding the Redis lock NAME, so that only one instance runs at a time\n"
    "across hosts. Exits with COMMAND's status; see the man page for every exit code.\n"
    "A busy lock is not waited for unless -w DURATION is given: the run exits 75 at once.\n"
    "DURATION: a number and a unit (ms, s, m, h, d), combinable: 250ms, 1.5s, 5m, 1h30m; a bare\n"
    "number is seconds (0.5 is 500ms).\n";

constexpr const char* exit_codes_text =
    "Exit codes: COMMAND's own status (128+N if killed by signal N); 75 lock busy (-E);\n"
    "64 usage; 65 key is not a lock; 69 Redis unreachable (or too few replicas for\n"
    "--min-replicas, or acquired too late to run safely); 70 internal; 71 no process\n"
    "for COMMAND (fork failed: a process limit); 76 lock lost;\n"
    "77 auth refused; 78 TLS verification failed; 79 stuck (--heartbeat-timeout,\n"
    "--max-renewals); 124 --max-runtime exceeded;\n"
    "126 command not executable; 127 command not found.\n"
    "status: 0 held, 1 free; release --token: 1 when another token holds the lock.";

}  // namespace

std::string help_text(const std::string& generated) {
    // CLI11 opens with its own usage line; ours names NAME and COMMAND.
    auto options = generated.find("Options:");
    return fmt::format("{}\n{}\n{}\n", usage_text,
                       options == std::string::npos ? generated : generated.substr(options),
                       exit_codes_text);
}

}  // namespace redlock
