// Every invocation refused before a connection is made, one row each: the words, the environment,
// the exit status and the line on stderr, through parse_command_line, failure_of (the mapping
// main.cpp returns) and log::stderr_line (the bytes main.cpp writes). These rows replaced the
// refusal cases of hostile_input.bats, failures.bats and inspect.bats, which started the binary
// once per case; hostile_input.bats keeps one test that a refused invocation makes no connection
// to Redis.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"

using namespace redlock;

namespace {

using Words = std::vector<std::string>;
using Variables = std::vector<std::pair<std::string, std::string>>;

struct Row {
    std::string name;  // the GoogleTest name: Refusals/Refused.Is/<name>
    Words words;       // argv after the program name
    Variables env;     // set for this row only, over an environment without any REDLOCK_*
    int code;
    // An ECMAScript regex searched in the stderr line after "redlock-run: " and anything (as the
    // bats `refuse` did); a leading '^' anchors it right after "redlock-run: ".
    std::string message;
    std::size_t max_line_bytes = 400;  // a hostile value is quoted shortened, never whole
    std::string absent = {};           // text the line must not show (a password)
};

// GoogleTest would print a row's 100 KB values in every name and failure: the name says enough.
[[maybe_unused]] void PrintTo(const Row& row, std::ostream* os) {
    *os << row.name;
}

const int usage = exit_code::usage;
const Words job = {"job", "--", "true"};

bool ours(std::string_view name) {
    return name.starts_with("REDLOCK_") || name == "REDISCLI_AUTH";
}

// Sets a row's variables over an environment cleared of every REDLOCK_* and REDISCLI_AUTH (the
// shell or ctest that started the tests may set some), and puts back exactly what it found when
// it goes: the rows run in one process, so one row's variables must never reach the next.
class RowEnvironment {
  public:
    explicit RowEnvironment(const Variables& vars) {
        std::set<std::string> names;
        for (char** entry = environ; *entry; ++entry) {
            std::string_view e(*entry);
            std::string name(e.substr(0, e.find('=')));
            if (ours(name)) names.insert(name);
        }
        for (const auto& [name, value] : vars) names.insert(name);
        for (const std::string& name : names) {
            const char* old = std::getenv(name.c_str());
            saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
            unsetenv(name.c_str());
        }
        for (const auto& [name, value] : vars) setenv(name.c_str(), value.c_str(), 1);
    }
    ~RowEnvironment() {
        for (const auto& [name, old] : saved_) {
            if (old)
                setenv(name.c_str(), old->c_str(), 1);
            else
                unsetenv(name.c_str());
        }
    }
    RowEnvironment(const RowEnvironment&) = delete;
    RowEnvironment& operator=(const RowEnvironment&) = delete;

  private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A row for `redlock-run WORDS... job -- true`, refused with a usage error.
Row with_job(std::string name, Words words, std::string message) {
    words.insert(words.end(), job.begin(), job.end());
    return {std::move(name), std::move(words), {}, usage, std::move(message)};
}

// A row for `redlock-run WORDS...` exactly as given.
Row as_given(std::string name, Words words, std::string message) {
    return {std::move(name), std::move(words), {}, usage, std::move(message)};
}

// A row for `VAR=VALUE redlock-run job -- true`.
Row from_env(std::string name, std::string var, std::string value, std::string message) {
    return {std::move(name), job, {{std::move(var), std::move(value)}}, usage, std::move(message)};
}

Row at_most(std::size_t bytes, Row row) {
    row.max_line_bytes = bytes;
    return row;
}

std::string repeated(std::size_t n, char c) {
    return std::string(n, c);
}

std::vector<Row> rows() {
    std::vector<Row> r = {
        // --- durations (hostile_input.bats) ---
        with_job("TtlZero", {"--ttl", "0"},
                 R"(invalid duration '0' for --ttl: must be greater than zero$)"),
        with_job("TtlNegative", {"--ttl", "-1s"},
                 R"(invalid duration '-1s' for --ttl: must be positive$)"),
        with_job("TtlExponent", {"--ttl", "1e9h"},
                 R"(invalid duration '1e9h' for --ttl: unknown unit 'e')"),
        with_job("KillAfterTwentyDigits", {"--kill-after", "99999999999999999999s"},
                 R"(invalid duration '99999999999999999999s' for --kill-after: too large$)"),
        with_job("MaxRuntimeUnknownUnit", {"--max-runtime", "5x"},
                 R"(invalid duration '5x' for --max-runtime: unknown unit 'x')"),
        with_job("TtlEmpty", {"--ttl", ""}, R"(invalid duration '' for --ttl: empty$)"),
        with_job("WaitEmpty", {"--wait", ""}, R"(invalid duration '' for --wait: empty$)"),
        with_job("MinHoldEmpty", {"--min-hold", ""},
                 R"(invalid duration '' for --min-hold: empty$)"),
        with_job("MaxRuntimeEmpty", {"--max-runtime", ""},
                 R"(invalid duration '' for --max-runtime: empty$)"),
        with_job("RenewEveryEmpty", {"--renew-every", ""},
                 R"(invalid duration '' for --renew-every: empty$)"),
        with_job("WaitEqualsEmpty", {"--wait="}, "wait"),
        with_job("ConnectTimeoutFinerThanAMillisecond", {"--connect-timeout", "1.0005s"},
                 R"(invalid duration '1\.0005s' for --connect-timeout: finer than a millisecond)"),
        with_job("TtlMissingItsLastUnit", {"--ttl", "1h30"},
                 R"(invalid duration '1h30' for --ttl: missing unit$)"),
        with_job("TtlLeadingSpace", {"--ttl", " 5s"},
                 R"(invalid duration ' 5s' for --ttl: expected a number)"),
        with_job("TtlTrailingNewline", {"--ttl", "5s\n"},
                 R"(invalid duration '5s\\x0a' for --ttl: unknown unit)"),
        at_most(
            300,
            with_job("TtlHundredKilobytes", {"--ttl", repeated(100'000, '7')},
                     R"(invalid duration '7{80}\.\.\.\(100000 bytes\)' for --ttl: too large$)")),
        // A value from the environment is named by its variable, where it must be fixed.
        from_env("EnvTtlNotADuration", "REDLOCK_TTL", "abc",
                 R"(invalid duration 'abc' for REDLOCK_TTL:)"),
        from_env("EnvCommandTimeoutNegative", "REDLOCK_COMMAND_TIMEOUT", "-1",
                 R"(invalid duration '-1' for REDLOCK_COMMAND_TIMEOUT:)"),
        from_env("EnvWaitNotADuration", "REDLOCK_WAIT", "soon",
                 R"(invalid duration 'soon' for REDLOCK_WAIT:)"),
        from_env("EnvOnLostUnknownAction", "REDLOCK_ON_LOST", "stop",
                 R"(invalid value 'stop' for REDLOCK_ON_LOST: expected term, kill or ignore$)"),
        with_job("TtlTooShortToRenew", {"--ttl", "50ms"}, R"(--ttl 50ms is too short)"),
        with_job("RenewEveryAboveHalfTheDefaultTtl", {"--renew-every", "20s"},
                 R"(--renew-every \(20s\) must be at most half of --ttl \(30s\))"),
        with_job("WaitBeyondTenYears", {"--wait", "5000d"},
                 R"(invalid duration '5000d' for --wait: too large$)"),

        // --- the traps of where options end (issue 34) ---
        as_given("OptionAfterNameWithoutDoubleDash", {"job", "-q", "true"},
                 R"(^'-q' after the lock NAME 'job' would be run as the command; put options )"
                 R"(before NAME, or end them with '--' \(redlock-run job OPTIONS -- COMMAND\)$)"),
        as_given("LongOptionAfterNameWithoutDoubleDash", {"job", "--ttl", "5", "ls"},
                 R"(^'--ttl' after the lock NAME 'job' would be run as the command)"),
        as_given("NotAnOptionBetweenNameAndDoubleDash", {"job", "-q", "foo", "--", "true"},
                 R"(^only options may come between the lock NAME 'job' and '--'; 'foo' is not )"
                 R"(one$)"),
        as_given("UnknownOptionBetweenNameAndDoubleDash", {"job", "-x", "--", "true"},
                 R"(^unknown option '-x' \(see --help\)$)"),
        as_given("OptionGivenBeforeAndAfterName", {"-t", "5s", "job", "-t", "6s", "--", "true"},
                 R"(^option '--ttl' given twice$)"),
        as_given("MisspeltSubcommandAndNoSuchCommand", {"stauts", "no-such-command-here"},
                 R"(^'stauts' is not a subcommand \(did you mean 'status'\?\) and )"
                 R"('no-such-command-here' is not a command in PATH; to run a command under a )"
                 R"(lock named 'stauts', write: redlock-run stauts -- COMMAND$)"),
        as_given("MisspeltListAlone", {"lsit"},
                 R"(^missing the COMMAND to run under lock 'lsit' \(did you mean the )"
                 R"(subcommand 'list'\?\)$)"),
        as_given("OptionTookTheNameAsItsValue", {"--wait", "job", "true"},
                 R"(^missing the COMMAND to run under lock 'true' \(did '--wait' take 'job' as )"
                 R"(its value\?\)$)"),

        // --- exit codes and enumerations (hostile_input.bats) ---
        with_job("ConflictExitCode256", {"-E", "256"},
                 R"(invalid value '256' for --conflict-exit-code: expected 0-255$)"),
        with_job("ConflictExitCodeNegative", {"-E", "-1"},
                 R"(invalid value '-1' for --conflict-exit-code)"),
        from_env("EnvConflictExitCodeNotANumber", "REDLOCK_CONFLICT_EXIT_CODE", "abc",
                 R"(^invalid value 'abc' for REDLOCK_CONFLICT_EXIT_CODE: expected 0-255$)"),
        with_job("OnLostUnknownAction", {"--on-lost", "stop"},
                 R"(invalid value 'stop' for --on-lost: expected term, kill or ignore$)"),
        from_env("EnvQuietNotABoolean", "REDLOCK_QUIET", "maybe", "quiet.*maybe"),

        // --- every value from the environment is named by its variable, where it is fixed ---
        from_env("EnvPermitsZero", "REDLOCK_PERMITS", "0",
                 R"(^invalid value '0' for REDLOCK_PERMITS: expected 1-)"),
        from_env("EnvMinReplicasNotANumber", "REDLOCK_MIN_REPLICAS", "two",
                 R"(^invalid value 'two' for REDLOCK_MIN_REPLICAS: expected 0-100$)"),
        from_env("EnvLedgerSizeNegative", "REDLOCK_LEDGER_SIZE", "-1",
                 R"(^invalid value '-1' for REDLOCK_LEDGER_SIZE: expected 0-)"),
        from_env("EnvSharedNotABoolean", "REDLOCK_SHARED", "sure",
                 R"(^REDLOCK_SHARED \(--shared\) must be 1, true, yes, on, 0, false, no or off, )"
                 R"(not 'sure'$)"),
        from_env("EnvTtlTooShort", "REDLOCK_TTL", "50ms",
                 R"(^REDLOCK_TTL 50ms is too short to renew safely)"),
        from_env("EnvRenewEveryAboveHalfTheTtl", "REDLOCK_RENEW_EVERY", "20s",
                 R"(^REDLOCK_RENEW_EVERY \(20s\) must be at most half of --ttl \(30s\))"),
        {"EnvTtlBelowTwiceRenewEvery",
         job,
         {{"REDLOCK_TTL", "2s"}, {"REDLOCK_RENEW_EVERY", "1500ms"}},
         usage,
         R"(^REDLOCK_RENEW_EVERY \(1\.500s\) must be at most half of REDLOCK_TTL \(2s\))"},
        from_env("EnvOncePerOutOfRange", "REDLOCK_ONCE_PER", "500ms",
                 R"(^REDLOCK_ONCE_PER 500ms is out of range: 1s to 366d$)"),
        {"EnvSlotOffsetNotBelowThePeriod",
         job,
         {{"REDLOCK_ONCE_PER", "1h"}, {"REDLOCK_SLOT_OFFSET", "2h"}},
         usage,
         R"(^REDLOCK_SLOT_OFFSET \(2h(0m0s)?\) must be less than REDLOCK_ONCE_PER \(1h(0m0s)?\))"},
        {"EnvReplicaTimeoutTooLong",
         job,
         {{"REDLOCK_MIN_REPLICAS", "1"}, {"REDLOCK_REPLICA_TIMEOUT", "10s"}},
         usage,
         R"(^REDLOCK_REPLICA_TIMEOUT \(10s\) must be at most a quarter)"},
        from_env("EnvUrlListOfTwo", "REDLOCK_URL", "redis://a:1,redis://b:1",
                 R"(^two Redis URLs given in REDLOCK_URL: )"),
        from_env("EnvUrlListBadPort", "REDLOCK_URL", "redis://a:1,redis://b:1,redis://c:0",
                 R"(^invalid Redis URL 'redis://c:0' in REDLOCK_URL: port must be 1-65535$)"),
        from_env("EnvPasswordFileMissing", "REDLOCK_PASSWORD_FILE", "/nonexistent/redlock-pw",
                 R"(^cannot read the password file '/nonexistent/redlock-pw' in )"
                 R"(REDLOCK_PASSWORD_FILE: )"),
        from_env("EnvSentinelPasswordFileWithoutSentinel", "REDLOCK_SENTINEL_PASSWORD_FILE",
                 "/nonexistent/redlock-pw",
                 R"(^REDLOCK_SENTINEL_PASSWORD_FILE needs a redis-sentinel:// URL$)"),
        from_env("EnvSentinelUserAlone", "REDLOCK_SENTINEL_USER", "u",
                 R"(^REDLOCK_SENTINEL_USER needs --sentinel-password-file$)"),
        {"EnvOncePerWithShared",
         job,
         {{"REDLOCK_ONCE_PER", "1h"}, {"REDLOCK_SHARED", "1"}},
         usage,
         R"(^REDLOCK_ONCE_PER does not combine with REDLOCK_SHARED: )"},
        {"EnvOncePerWithPermits",
         job,
         {{"REDLOCK_ONCE_PER", "1h"}, {"REDLOCK_PERMITS", "3"}},
         usage,
         R"(^REDLOCK_ONCE_PER needs REDLOCK_PERMITS 1: )"},
        {"EnvTlsCacertMissing",
         job,
         {{"REDLOCK_URL", "rediss://127.0.0.1:1"}, {"REDLOCK_TLS_CACERT", "/nonexistent/ca.pem"}},
         usage,
         R"(^cannot read the REDLOCK_TLS_CACERT file '/nonexistent/ca\.pem': )"},
        {"EnvTlsCacertdirMissing",
         job,
         {{"REDLOCK_URL", "rediss://127.0.0.1:1"}, {"REDLOCK_TLS_CACERTDIR", "/nonexistent/ca"}},
         usage,
         R"(^cannot read the REDLOCK_TLS_CACERTDIR directory '/nonexistent/ca': )"},
        {"EnvTlsKeyWithoutCert",
         job,
         {{"REDLOCK_URL", "rediss://127.0.0.1:1"}, {"REDLOCK_TLS_KEY", "/nonexistent/k.pem"}},
         usage,
         R"(^REDLOCK_TLS_KEY needs --cert \(the client certificate\)$)"},
        from_env("EnvMetricsFileInAMissingDirectory", "REDLOCK_METRICS_FILE",
                 "/nonexistent/redlock/m.prom",
                 R"(^REDLOCK_METRICS_FILE '/nonexistent/redlock/m\.prom': its directory )"),

        // --- URLs (hostile_input.bats) ---
        with_job("UrlUnknownScheme", {"-u", "ftp://127.0.0.1"},
                 R"(invalid Redis URL 'ftp://127\.0\.0\.1': expected redis://)"),
        with_job("UrlPortZero", {"-u", "redis://127.0.0.1:0"},
                 R"(invalid Redis URL 'redis://127\.0\.0\.1:0': port must be 1-65535$)"),
        with_job("UrlPort70000", {"-u", "redis://127.0.0.1:70000"}, R"(port must be 1-65535$)"),
        with_job("UrlPortNotANumber", {"-u", "redis://127.0.0.1:63x9"}, R"(port must be 1-65535$)"),
        with_job("UrlPortEmpty", {"-u", "redis://127.0.0.1:"}, R"(empty port$)"),
        with_job("UrlMissingHost", {"-u", "redis://:6379"},
                 R"(invalid Redis URL 'redis://:6379': missing host$)"),
        with_job("UrlSchemeOnly", {"-u", "redis://"}, R"(missing host$)"),
        with_job("UrlUserWithoutHost", {"-u", "redis://user@/2"}, R"(missing host$)"),
        with_job("UrlUnclosedIpv6Bracket", {"-u", "redis://[::1:6379"},
                 R"(unclosed '\[' in an IPv6 address$)"),
        with_job("UrlBracketsAroundNonIpv6", {"-u", "redis://[zz::1]:6379"},
                 R"(not an IPv6 address inside)"),
        with_job("UrlBracketsAroundIpv4", {"-u", "redis://[127.0.0.1]:6379"},
                 R"(not an IPv6 address inside)"),
        with_job("UrlEmptyBrackets", {"-u", "redis://[]:6379"}, R"(missing host|not an IPv6)"),
        with_job("UrlIpv6WithoutBrackets", {"-u", "redis://::1:6379"},
                 R"(put an IPv6 address in brackets)"),
        with_job("UrlJunkAfterIpv6Bracket", {"-u", "redis://[::1]6379"},
                 R"(expected ':port' after '\]')"),
        with_job("UrlDatabaseNegative", {"-u", "redis://127.0.0.1:6379/-1"},
                 R"(the path must be a database number$)"),
        with_job("UrlDatabaseNotANumber", {"-u", "redis://127.0.0.1:6379/two"},
                 R"(the path must be a database number$)"),
        with_job("UnixUrlDbQueryNotANumber", {"-u", "unix:///tmp/redis.sock?db=x"},
                 R"(the only query parameter is db=N$)"),
        with_job("UrlBadEscapeInPassword", {"-u", "redis://u:p%zz@127.0.0.1"},
                 R"(bad %-escape in the password$)"),
        with_job("UrlCutEscapeInPassword", {"-u", "redis://u:p%4@127.0.0.1"},
                 R"(bad %-escape in the password$)"),
        with_job("UrlBadEscapeInUser", {"-u", "redis://%g0:p@127.0.0.1"},
                 R"(bad %-escape in the user name$)"),
        with_job("UnixUrlBadEscapeInPath", {"-u", "unix:///tmp/%"}, R"(bad %-escape in the path$)"),
        at_most(300, with_job("UrlHundredKilobytes",
                              {"-u", "redis://" + repeated(100'000, 'h') + ":6379"},
                              R"(invalid Redis URL 'redis://h{72}\.\.\.\(100013 bytes\)': )"
                              R"(the host name is longer than 253 bytes$)")),
        at_most(400,
                with_job("ClusterSeedHundredKilobytes",
                         {"-u", "redis-cluster://a:1," + repeated(100'000, 'h')},
                         R"(invalid Redis URL 'redis-cluster://a:1,h{60}\.\.\.\(100020 bytes\)': )"
                         R"(seed 2 \('h{80}\.\.\.\(100000 bytes\)'\) is not host\[:port\]$)")),
        at_most(400,
                with_job("SentinelAddressHundredKilobytes",
                         {"-u", "redis-sentinel://a:1," + repeated(100'000, 'h') + "/mymaster"},
                         R"(invalid Redis URL 'redis-sentinel://a:1,h{59}\.\.\.\(100030 bytes\)': )"
                         R"(the host name is longer than 253 bytes$)")),
        with_job("UnixSocketPathTooLong", {"-u", "unix:///" + repeated(200, 's')},
                 R"(the socket path is longer than 107 bytes$)"),
        with_job("UnixSocketPathRelative", {"-u", "unix://redis.sock"},
                 R"(expected unix:///absolute/path\.sock$)"),
        with_job("UrlEmpty", {"-u", ""}, R"(invalid Redis URL '': expected redis://)"),
        from_env("EnvUrlPort99999", "REDLOCK_URL", "redis://127.0.0.1:99999",
                 R"(^invalid Redis URL 'redis://127\.0\.0\.1:99999' in REDLOCK_URL: port must be )"
                 R"(1-65535$)"),
        with_job("UrlIpv6ZoneIdNotWrittenPercent25", {"-u", "redis://[::1%zz]"},
                 R"(a '%' inside '.....' starts a zone id, written '%25' and the zone)"),
        with_job("UnixUrlEscapedNul", {"-u", "unix:///tmp/x%00y"},
                 R"(invalid Redis URL 'unix:///tmp/x%00y': a NUL byte \(%00\) in the path$)"),

        // --- names (hostile_input.bats) ---
        as_given("NameEmpty", {"", "--", "true"}, R"(the lock NAME must not be empty$)"),
        as_given("NameAsLongAsOneArgument", {repeated(131'071, 'n'), "--", "true"},
                 R"(the lock key \(--prefix and NAME\) is 131071 bytes long; at most 1024$)"),
        from_env("EnvPrefixHundredKilobytes", "REDLOCK_PREFIX", repeated(100'000, 'p'),
                 R"(the lock key \(REDLOCK_PREFIX and NAME\) is 100003 bytes long)"),
        as_given("NameWithNewlineInside", {"a\nb", "--", "true"},
                 R"(the lock NAME 'a\\nb' contains a control character$)"),
        as_given("NameEndingInNewline", {"job\n", "--", "true"},
                 R"(the lock NAME 'job\\n' contains a control character$)"),
        as_given("NameWithEscapeSequence", {"x\x1b[2J", "--", "true"},
                 R"(the lock NAME 'x\\x1b\[2J' contains a control character$)"),
        from_env("EnvPrefixCarriageReturn", "REDLOCK_PREFIX", "locks:\r",
                 R"(the REDLOCK_PREFIX 'locks:\\r' contains a control character$)"),
        from_env("EnvPrefixTab", "REDLOCK_PREFIX", "a\tb", R"(contains a control character$)"),

        // --- options (hostile_input.bats) ---
        as_given("ShellAndCommand", {"-c", "touch x", "job", "--", "true"},
                 R"(give either --shell 'CMD' or COMMAND \[ARGS\.\.\.\], not both$)"),
        as_given("ReleaseTokenAndForce", {"release", "--token", "t", "--force", "held"},
                 R"(give either --token or --force to 'release', not both$)"),
        with_job("TokenForARun", {"--token", "t"},
                 R"(option '--token' is for release, not for running a command$)"),
        as_given("TtlForStatus", {"status", "--ttl", "5s", "held"},
                 R"(option '--ttl' is for running a command, not for 'status'$)"),
        as_given("JsonForRelease", {"release", "--json", "--force", "held"},
                 R"(option '--json' is only for status, list and history, not for 'release'$)"),
        with_job("TtlTwice", {"--ttl", "5s", "--ttl", "10s"}, "ttl"),
        as_given("ReleaseTokenTwice", {"release", "--token", "a", "--token", "b", "job"},
                 R"(--token given 2 times; give it once$)"),
        with_job("TtlThreeTimes", {"--ttl", "5s", "--ttl", "6s", "--ttl", "7s"},
                 R"(--ttl given 3 times; give it once$)"),
        as_given("ShellBeforeAndAfterName", {"-c", "touch x", "job", "-c", "touch y"},
                 R"(--shell given twice$)"),
        as_given("StatusTwoNames", {"status", "held", "job"},
                 R"('status' takes one lock NAME, got 2$)"),
        with_job("UnknownLongOption", {"--frobnicate"},
                 R"(unknown option '--frobnicate' \(see --help\)$)"),
        with_job("UnknownShortOption", {"-Z"}, R"(unknown option '-Z' \(see --help\)$)"),
        with_job("UnknownShortOptionInACluster", {"-qZ"}, R"(unknown option '-Z')"),
        as_given("TtlMissingItsValue", {"--ttl"}, R"(option '--ttl' needs a value$)"),
        with_job("QuietGivenAValue", {"--quiet=yes"}, R"(option '--quiet' takes no value$)"),
        as_given("CommandMissingAfterDoubleDash", {"job", "--"},
                 R"(missing the COMMAND to run under lock 'job'$)"),
        as_given("NameMissingAfterAnOption", {"-t", "5s"}, R"(missing the lock NAME)"),
        as_given("ShellEmpty", {"-c", "", "job"}, R"(--shell needs a non-empty command$)"),

        // --- failures.bats ---
        as_given("RenewEveryEqualToTtl", {"-t", "2s", "--renew-every", "2s", "job", "--", "true"},
                 R"(--renew-every)"),
        as_given("RenewEveryAboveTtl", {"-t", "2s", "--renew-every", "5s", "job", "--", "true"},
                 R"(--renew-every)"),
        as_given("RenewEveryJustUnderASecondTtl",
                 {"-t", "1s", "--renew-every", "990ms", "job", "--", "true"}, R"(at most half)"),
        with_job("MaxRuntimeTooLargeForDeadlines", {"--max-runtime", "2562047h"}, R"(too large)"),
        with_job("WaitTooLargeForDeadlines", {"--wait", "2562047h"}, R"(too large)"),
        from_env("EnvTtlUnknownUnit", "REDLOCK_TTL", "5x",
                 R"(invalid duration .5x. for REDLOCK_TTL: unknown unit)"),
        from_env("EnvUrlHttp", "REDLOCK_URL", "http://x",
                 R"(^invalid Redis URL 'http://x' in REDLOCK_URL: expected redis://)"),
        as_given("NoWordsAtAll", {}, R"(^missing the lock NAME)"),
        as_given("NameWithoutCommand", {"job"}, R"(^missing the COMMAND to run under lock 'job')"),
        as_given("UnknownLongOptionBeforeName", {"--frobnicate", "job", "--", "true"},
                 R"(frobnicate)"),
        as_given("UnknownShortOptionBeforeName", {"-Z", "job", "--", "true"}, R"('-Z')"),
        // A refused name is quoted escaped: it can neither forge a second line nor colour one.
        as_given("NameForgingAMessageLine", {"evil\nredlock-run: forged\x1b[31m", "--", "true"},
                 R"(evil\\nredlock-run: forged\\x1b\[31m)"),

        // --- inspect.bats: the command line of status, list and release ---
        as_given("WaitForList", {"--wait", "5s", "list"},
                 R"(option '--wait' is for running a command, not for 'list'$)"),
        as_given("ConflictExitCodeForReleaseAfterName", {"release", "job", "--force", "-E", "3"},
                 R"(option '--conflict-exit-code' is for running a command, not for 'release'$)"),
        as_given("JsonForARun", {"--json", "job", "--", "true"},
                 R"(option '--json' is for status and list, not for running a command$)"),
        as_given("TokenForStatus", {"status", "--token", "abc", "job"},
                 R"(option '--token' is only for release, not for 'status'$)"),
        as_given("ForceForList", {"list", "--force"},
                 R"(option '--force' is only for release, not for 'list'$)"),
        as_given("StatusWithoutName", {"status"}, R"('status' needs the lock NAME$)"),
        as_given("ListTwoPatterns", {"list", "a", "b"},
                 R"('list' takes at most one PATTERN, got 2$)"),
        as_given("ReleaseWithoutName", {"release", "--force"}, R"('release' needs the lock NAME$)"),
        as_given("ReleaseWithoutTokenOrForce", {"release", "job"},
                 R"('release' needs --token T \(.*\) or --force)"),
        as_given("ReleaseTokenAndForceAfterName", {"release", "job", "--token", "tok", "--force"},
                 R"(give either --token or --force to 'release', not both$)"),
    };

    // failures.bats: each bad duration, for -t and for --kill-after=, names the value and option.
    const std::vector<std::pair<std::string, std::string>> durations = {
        {"0", "Zero"},
        {"-1s", "Negative"},
        {"5x", "UnknownUnit"},
        {"99999999999999999999", "TwentyDigits"},
        {"1.0005s", "FinerThanAMillisecond"}};
    for (const auto& [bad, label] : durations) {
        std::string quoted = std::regex_replace(bad, std::regex(R"([.])"), R"(\.)");
        r.push_back(as_given("BadDurationTtl" + label, {"-t", bad, "job", "--", "true"},
                             "'" + quoted + "' for --ttl"));
        r.push_back(as_given("BadDurationKillAfter" + label,
                             {"--kill-after=" + bad, "job", "--", "true"},
                             "'" + quoted + "' for --kill-after"));
    }

    // failures.bats: bad URLs, each a usage error saying so first.
    const std::vector<std::pair<std::string, std::string>> urls = {
        {"redis://host:99999", "Port99999"},
        {"http://x", "Http"},
        {"redis://[::1", "UnclosedBracket"},
        {"redis://", "SchemeOnly"},
        {"unix://relative", "RelativeSocket"}};
    for (const auto& [url, label] : urls)
        r.push_back(with_job("BadUrl" + label, {"-u", url}, "^invalid Redis URL"));

    // hostile_input.bats: no error about a URL or a URL list ever shows the password, whether
    // the URL comes from -u or from REDLOCK_URL.
    const std::string secret = "Sx9qTz";
    const std::vector<std::string> passwords = {
        secret + ",redis://" + secret, secret + ",redis://x@" + secret, secret + "@" + secret,
        secret + "%" + secret,         secret + "%zz" + secret,         secret + "\n" + secret,
        secret + "%00" + secret};
    for (std::size_t p = 0; p < passwords.size(); ++p) {
        const std::string& pw = passwords[p];
        const std::vector<std::string> values = {"redis://u:" + pw + "@127.0.0.1:99999",
                                                 "redis://a:1,redis://u:" + pw + "@h:0,redis://c",
                                                 "redis-cluster://u:" + pw + "@h1:0,h2",
                                                 "redis://u:" + pw + "@[::1%zz]"};
        for (std::size_t v = 0; v < values.size(); ++v) {
            std::string label = "PasswordHidden" + std::to_string(p) + "Url" + std::to_string(v);
            Row env = from_env(label + "Env", "REDLOCK_URL", values[v], "");
            env.absent = secret;
            r.push_back(env);
            Row flag = with_job(label + "Flag", {"-u", values[v]}, "");
            flag.absent = secret;
            r.push_back(flag);
        }
    }
    // --ping: http(s) only, bounded, printable; the refusal never shows the URL's secret parts
    // (its user info, its path: Healthchecks.io's check UUID, its query).
    const std::string ping_secret = "c7e1-ping-uuid";
    const std::vector<std::tuple<std::string, std::string, std::string>> pings = {
        {"", "Empty", R"(^--ping needs a URL$)"},
        {"ftp://h/" + ping_secret, "Ftp", R"(^--ping needs an http:// or https:// URL$)"},
        {"file:///" + ping_secret, "File", R"(^--ping needs an http:// or https:// URL$)"},
        {"hc-ping.com/" + ping_secret, "NoScheme", R"(^--ping needs an http:// or https:// URL$)"},
        {"https:///" + ping_secret, "NoHost", R"(^--ping: the URL https:///\.\.\. has no host$)"},
        {"https://u:" + ping_secret + "@/x", "NoHostButUserInfo",
         R"(^--ping: the URL https:///\.\.\. has no host$)"},
        {"https://h/" + ping_secret + " x", "Space", R"(^--ping: the URL holds a space)"},
        {"https://h/" + ping_secret + "\nredlock-run: forged", "Newline",
         R"(^--ping: the URL holds a space, a control character)"},
        {"https://h/" + ping_secret + "\xc3\xa9", "NotAscii",
         R"(byte that is not ASCII; percent-encode it$)"},
        {"https://h/" + ping_secret + repeated(3000, 'a'), "TooLong",
         R"(^--ping: the URL is 3024 bytes long; at most 2048$)"}};
    for (const auto& [url, label, message] : pings) {
        Row flag = with_job("Ping" + label, {"--ping", url}, message);
        flag.absent = ping_secret;
        r.push_back(flag);
    }
    Row ping_env = from_env("PingEnvFtp", "REDLOCK_PING", "ftp://h/" + ping_secret,
                            R"(^REDLOCK_PING needs an http:// or https:// URL$)");
    ping_env.absent = ping_secret;
    r.push_back(ping_env);
    r.push_back(with_job("PingTimeoutWithoutPing", {"--ping-timeout", "5s"},
                         R"(^--ping-timeout needs --ping$)"));
    r.push_back(with_job("PingTimeoutAboveAMinute",
                         {"--ping", "http://h/x", "--ping-timeout", "2m"},
                         R"(^--ping-timeout 2m is out of range: 100ms to 1m$)"));
    r.push_back(with_job("PingTimeoutTooShort", {"--ping", "http://h/x", "--ping-timeout", "10ms"},
                         R"(^--ping-timeout 10ms is out of range: 100ms to 1m$)"));
    r.push_back(with_job("PingTimeoutNotADuration", {"--ping", "http://h/x", "--ping-timeout", "x"},
                         R"(^invalid duration 'x' for --ping-timeout)"));
    return r;
}

class Refused : public ::testing::TestWithParam<Row> {};

}  // namespace

// What main.cpp would print and return for the row's invocation: exactly one line, starting
// "redlock-run: ", matching the row, short, with the row's exit status.
TEST_P(Refused, Is) {
    const Row& row = GetParam();
    RowEnvironment env(row.env);
    Words args{"redlock-run"};
    args.insert(args.end(), row.words.begin(), row.words.end());
    std::optional<Failure> failure;
    try {
        parse_command_line(args);
    } catch (const std::exception& e) {
        failure = failure_of(e);
    }
    ASSERT_TRUE(failure) << "accepted";
    EXPECT_EQ(failure->code, row.code) << failure->message;
    std::string line = log::stderr_line(failure->message);
    std::string pattern = row.message.starts_with('^')
                              ? "^redlock-run: (?:" + row.message.substr(1) + ")"
                              : "^redlock-run: .*(?:" + row.message + ")";
    EXPECT_TRUE(std::regex_search(line, std::regex(pattern)))
        << line << "\ndoes not match " << pattern;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_LE(line.size(), row.max_line_bytes) << line;
    if (!row.absent.empty()) {
        EXPECT_EQ(failure->message.find(row.absent), std::string::npos) << failure->message;
    }
}

INSTANTIATE_TEST_SUITE_P(Refusals, Refused, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// The rows' environment handling itself: a row's variables are gone after it, and what the
// process had before (here a REDLOCK_URL, as bats and a developer's shell set) is back.
TEST(RowEnvironment, ClearsOurVariablesAndPutsBackWhatItFound) {
    RowEnvironment outer(
        Variables{{"REDLOCK_URL", "redis://before:1"}});  // and puts back the real one
    {
        RowEnvironment env(Variables{{"REDLOCK_TTL", "5s"}});
        EXPECT_EQ(std::getenv("REDLOCK_URL"), nullptr);
        EXPECT_STREQ(std::getenv("REDLOCK_TTL"), "5s");
    }
    EXPECT_STREQ(std::getenv("REDLOCK_URL"), "redis://before:1");
    EXPECT_EQ(std::getenv("REDLOCK_TTL"), nullptr);
}

// main.cpp's mapping: our errors keep their code, anything else is an internal error (70).
TEST(FailureOf, KeepsOurCodesAndCallsTheRestInternal) {
    Failure usage_failure = failure_of(UsageError("bad"));
    EXPECT_EQ(usage_failure.code, 64);
    EXPECT_EQ(usage_failure.message, "bad");
    EXPECT_EQ(failure_of(RedisUnavailable("down")).code, 69);
    EXPECT_EQ(failure_of(NotOwner("theirs")).code, 1);
    Failure other = failure_of(std::logic_error("oops"));
    EXPECT_EQ(other.code, 70);
    EXPECT_EQ(other.message, "internal error: oops");
}
