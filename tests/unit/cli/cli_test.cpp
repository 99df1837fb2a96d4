// The command line: where our options end, environment defaults under flags, the -c forms, and
// every malformed invocation a UsageError.
#include "cli/cli.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <initializer_list>

#include "util/errors.hpp"

using redlock::Action;
using redlock::Invocation;
using redlock::OnLost;
using redlock::parse_command_line;
using redlock::UsageError;
using std::chrono::milliseconds;
using Args = std::vector<std::string>;

namespace {

Invocation parse(std::initializer_list<const char*> words) {
    Args args{"redlock-run"};
    for (const char* w : words) args.emplace_back(w);
    return parse_command_line(args);
}

void expect_usage_error(std::initializer_list<const char*> words, const std::string& needle = "") {
    std::string joined;
    for (const char* w : words) joined += std::string(w) + " ";
    try {
        parse(words);
        ADD_FAILURE() << "accepted: " << joined;
    } catch (const UsageError& e) {
        EXPECT_EQ(e.code(), 64);
        if (!needle.empty()) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
                << joined << "-> " << e.what();
        }
    }
}

// Every test starts from an environment with none of our variables set.
class Cli : public ::testing::Test {
  protected:
    void SetUp() override { clear(); }
    void TearDown() override { clear(); }
    static void clear() {
        for (const char* v :
             {"REDLOCK_URL", "REDLOCK_PASSWORD_FILE", "REDLOCK_PREFIX", "REDLOCK_CONNECT_TIMEOUT",
              "REDLOCK_COMMAND_TIMEOUT", "REDLOCK_VERBOSE", "REDLOCK_TTL", "REDLOCK_RENEW_EVERY",
              "REDLOCK_WAIT", "REDLOCK_CONFLICT_EXIT_CODE", "REDLOCK_QUIET", "REDLOCK_ON_LOST",
              "REDLOCK_KILL_AFTER", "REDISCLI_AUTH", "REDLOCK_SHARED", "REDLOCK_PERMITS"})
            unsetenv(v);
    }
};

}  // namespace

TEST_F(Cli, Defaults) {
    Invocation inv = parse({"job", "true"});
    EXPECT_EQ(inv.action, Action::run);
    const auto& r = inv.run;
    EXPECT_EQ(r.name, "job");
    EXPECT_EQ(r.command, Args{"true"});
    EXPECT_EQ(r.ttl, milliseconds(30'000));
    EXPECT_EQ(r.renew_every, milliseconds(10'000));
    EXPECT_FALSE(r.wait);
    EXPECT_EQ(r.conflict_exit_code, 75);
    EXPECT_FALSE(r.quiet);
    EXPECT_EQ(r.on_lost, OnLost::term);
    EXPECT_EQ(r.kill_after, milliseconds(10'000));
    EXPECT_EQ(r.conn.endpoint.host, "127.0.0.1");
    EXPECT_EQ(r.conn.endpoint.port, 6379);
    EXPECT_EQ(r.conn.timeouts.connect, milliseconds(2000));
    EXPECT_EQ(r.conn.timeouts.command, milliseconds(2000));
    EXPECT_EQ(r.conn.prefix, "");
    EXPECT_FALSE(r.conn.verbose);
}

TEST_F(Cli, OptionsEndAtName) {
    Invocation inv = parse({"-t", "5s", "job", "ls", "--ttl", "9", "-v"});
    EXPECT_EQ(inv.run.name, "job");
    EXPECT_EQ(inv.run.ttl, milliseconds(5000));
    EXPECT_EQ(inv.run.command, (Args{"ls", "--ttl", "9", "-v"}));
    EXPECT_FALSE(inv.run.conn.verbose);
}

TEST_F(Cli, CommandOptionsAfterNameAreNeverOurs) {
    Invocation inv = parse({"job", "ls", "--ttl", "5"});
    EXPECT_EQ(inv.run.ttl, milliseconds(30'000));
    EXPECT_EQ(inv.run.command, (Args{"ls", "--ttl", "5"}));
    // Even an unknown option after NAME is the command's business.
    EXPECT_EQ(parse({"job", "ls", "--bogus"}).run.command, (Args{"ls", "--bogus"}));
}

TEST_F(Cli, DoubleDashAfterNameIsDropped) {
    EXPECT_EQ(parse({"job", "--", "ls", "-l"}).run.command, (Args{"ls", "-l"}));
    // Only the first one: a later "--" belongs to the command.
    EXPECT_EQ(parse({"job", "--", "--", "x"}).run.command, (Args{"--", "x"}));
    EXPECT_EQ(parse({"job", "ls", "--", "x"}).run.command, (Args{"ls", "--", "x"}));
}

// Before an explicit "--", the words after NAME are options too.
TEST_F(Cli, OptionsBetweenNameAndDoubleDash) {
    Invocation inv = parse({"-t", "5s", "job", "-q", "--wait", "1m", "--", "ls", "-q"});
    EXPECT_EQ(inv.run.name, "job");
    EXPECT_TRUE(inv.run.quiet);
    EXPECT_EQ(inv.run.ttl, milliseconds(5000));
    EXPECT_EQ(inv.run.wait, milliseconds(60'000));
    EXPECT_EQ(inv.run.command, (Args{"ls", "-q"}));
    // A command's own "--" after a command word stays the command's.
    EXPECT_EQ(parse({"job", "ls", "-q", "--", "x"}).run.command, (Args{"ls", "-q", "--", "x"}));
    // flock's "NAME -c CMD" is unchanged.
    EXPECT_EQ(parse({"job", "-c", "echo hi"}).run.command, (Args{"/bin/sh", "-c", "echo hi"}));
}

// A NAME that looks like a mistyped subcommand is refused only when its command cannot run:
// a lock named "stats" for a command that exists is an ordinary run.
TEST_F(Cli, ANameLikeASubcommandRunsWhenItsCommandExists) {
    EXPECT_EQ(parse({"stats", "true"}).run.name, "stats");
    EXPECT_EQ(parse({"stauts", "--", "no-such-command-here"}).run.name, "stauts");
    EXPECT_EQ(parse({"lint", "no-such-command-here"}).run.name, "lint");  // not a typo of list
    EXPECT_EQ(parse({"help"}).action, Action::help);
    EXPECT_EQ(parse({"help", "true"}).run.name, "help");
}

// Only the built-in endpoint is marked as the default, for the connect error's hint.
TEST_F(Cli, TheDefaultEndpointIsMarkedOnlyWhenNoUrlWasGiven) {
    EXPECT_TRUE(parse({"job", "true"}).run.conn.endpoint.is_default);
    EXPECT_FALSE(
        parse({"-u", "redis://127.0.0.1:6379", "job", "true"}).run.conn.endpoint.is_default);
    setenv("REDLOCK_URL", "redis://127.0.0.1:6379", 1);
    EXPECT_FALSE(parse({"job", "true"}).run.conn.endpoint.is_default);
}

// flock's -n and a short -s: the habits of flock and consul users.
TEST_F(Cli, NoWaitAndShortShared) {
    setenv("REDLOCK_WAIT", "10m", 1);
    EXPECT_EQ(parse({"job", "true"}).run.wait, milliseconds(600'000));
    EXPECT_FALSE(parse({"-n", "job", "true"}).run.wait);
    EXPECT_FALSE(parse({"--no-wait", "job", "true"}).run.wait);
    expect_usage_error({"-n", "-w", "forever", "job", "true"},
                       "give either --wait or --no-wait, not both");
    EXPECT_TRUE(parse({"-s", "job", "true"}).run.shared);
}

TEST_F(Cli, DoubleDashBeforeNameEndsOptions) {
    Invocation inv = parse({"-q", "--", "-weird-name", "true"});
    EXPECT_EQ(inv.run.name, "-weird-name");
    EXPECT_TRUE(inv.run.quiet);
    EXPECT_EQ(inv.run.command, Args{"true"});
}

TEST_F(Cli, RunWordIsOptional) {
    Invocation inv = parse({"-q", "run", "-t", "3s", "job", "true"});
    EXPECT_EQ(inv.run.name, "job");
    EXPECT_EQ(inv.run.ttl, milliseconds(3000));
    EXPECT_TRUE(inv.run.quiet);
    // A lock literally named "run" needs "--".
    EXPECT_EQ(parse({"--", "run", "true"}).run.name, "run");
}

TEST_F(Cli, OptionSpellings) {
    EXPECT_EQ(parse({"--ttl=4s", "j", "x"}).run.ttl, milliseconds(4000));
    EXPECT_EQ(parse({"-t4s", "j", "x"}).run.ttl, milliseconds(4000));
    Invocation inv = parse({"-qvt", "4s", "j", "x"});
    EXPECT_TRUE(inv.run.quiet);
    EXPECT_TRUE(inv.run.conn.verbose);
    EXPECT_EQ(inv.run.ttl, milliseconds(4000));
}

TEST_F(Cli, EveryOptionIsRead) {
    Invocation inv = parse({"-u",
                            "redis://h:7000/2",
                            "--prefix",
                            "app:",
                            "--connect-timeout",
                            "300ms",
                            "--command-timeout",
                            "4s",
                            "-t",
                            "6s",
                            "--renew-every",
                            "1s",
                            "-w",
                            "1m",
                            "-E",
                            "0",
                            "-q",
                            "--on-lost",
                            "kill",
                            "--kill-after",
                            "2s",
                            "-v",
                            "job",
                            "true"});
    const auto& r = inv.run;
    EXPECT_EQ(r.conn.endpoint.host, "h");
    EXPECT_EQ(r.conn.endpoint.port, 7000);
    EXPECT_EQ(r.conn.endpoint.db, 2);
    EXPECT_EQ(r.conn.prefix, "app:");
    EXPECT_EQ(r.conn.timeouts.connect, milliseconds(300));
    EXPECT_EQ(r.conn.timeouts.command, milliseconds(4000));
    EXPECT_EQ(r.ttl, milliseconds(6000));
    EXPECT_EQ(r.renew_every, milliseconds(1000));
    EXPECT_EQ(r.wait, milliseconds(60'000));
    EXPECT_EQ(r.conflict_exit_code, 0);
    EXPECT_TRUE(r.quiet);
    EXPECT_EQ(r.on_lost, OnLost::kill);
    EXPECT_EQ(r.kill_after, milliseconds(2000));
    EXPECT_TRUE(r.conn.verbose);
    EXPECT_EQ(parse({"--on-lost", "ignore", "j", "x"}).run.on_lost, OnLost::ignore);
    EXPECT_EQ(parse({"-w", "forever", "j", "x"}).run.wait, milliseconds::max());
}

TEST_F(Cli, RenewEveryDefaultsToAThirdOfTheTtl) {
    EXPECT_EQ(parse({"-t", "3s", "j", "x"}).run.renew_every, milliseconds(1000));
    EXPECT_EQ(parse({"-t", "100ms", "j", "x"}).run.renew_every, milliseconds(33));
}

TEST_F(Cli, EnvironmentSuppliesDefaultsAndFlagsWin) {
    setenv("REDLOCK_TTL", "5s", 1);
    setenv("REDLOCK_URL", "redis://envhost:7001", 1);
    setenv("REDLOCK_PREFIX", "env:", 1);
    setenv("REDLOCK_CONFLICT_EXIT_CODE", "3", 1);
    setenv("REDLOCK_ON_LOST", "ignore", 1);
    setenv("REDLOCK_QUIET", "1", 1);
    setenv("REDLOCK_VERBOSE", "1", 1);
    setenv("REDLOCK_RENEW_EVERY", "1s", 1);
    setenv("REDLOCK_WAIT", "forever", 1);
    Invocation env = parse({"j", "x"});
    EXPECT_EQ(env.run.ttl, milliseconds(5000));
    EXPECT_EQ(env.run.conn.endpoint.host, "envhost");
    EXPECT_EQ(env.run.conn.endpoint.port, 7001);
    EXPECT_EQ(env.run.conn.prefix, "env:");
    EXPECT_EQ(env.run.conflict_exit_code, 3);
    EXPECT_EQ(env.run.on_lost, OnLost::ignore);
    EXPECT_TRUE(env.run.quiet);
    EXPECT_TRUE(env.run.conn.verbose);
    EXPECT_EQ(env.run.renew_every, milliseconds(1000));
    EXPECT_EQ(env.run.wait, milliseconds::max());

    Invocation flags = parse({"-t", "9s", "-u", "redis://flaghost", "--prefix", "f:", "-E", "4",
                              "--on-lost", "kill", "-w", "2s", "j", "x"});
    EXPECT_EQ(flags.run.ttl, milliseconds(9000));
    EXPECT_EQ(flags.run.conn.endpoint.host, "flaghost");
    EXPECT_EQ(flags.run.conn.prefix, "f:");
    EXPECT_EQ(flags.run.conflict_exit_code, 4);
    EXPECT_EQ(flags.run.on_lost, OnLost::kill);
    EXPECT_EQ(flags.run.wait, milliseconds(2000));
}

TEST_F(Cli, SharedFromFlagOrEnvironment) {
    EXPECT_FALSE(parse({"job", "true"}).run.shared);
    EXPECT_TRUE(parse({"--shared", "job", "true"}).run.shared);
    setenv("REDLOCK_SHARED", "1", 1);
    EXPECT_TRUE(parse({"job", "true"}).run.shared);
    setenv("REDLOCK_SHARED", "maybe", 1);
    expect_usage_error({"job", "true"}, "REDLOCK_SHARED");
}

// Shared holders run side by side, so a slot's runs could too: refused, from flags or environment,
// as --once-per with --permits is (before, shared.lua ignored the slot and every run ran).
TEST_F(Cli, OncePerRefusesSharedAndPermits) {
    EXPECT_TRUE(parse({"--once-per", "1h", "job", "true"}).run.job.once_per);
    expect_usage_error({"--shared", "--once-per", "1h", "job", "true"},
                       "--once-per does not combine with --shared");
    setenv("REDLOCK_SHARED", "1", 1);
    expect_usage_error({"--once-per", "1h", "job", "true"},
                       "--once-per does not combine with REDLOCK_SHARED");
    unsetenv("REDLOCK_SHARED");
    expect_usage_error({"--permits", "2", "--once-per", "1h", "job", "true"},
                       "--once-per needs --permits 1");
}

TEST_F(Cli, SharedRefusesPermitsButNotAQuorum) {
    EXPECT_TRUE(parse({"--shared", "--permits", "1", "job", "true"}).run.shared);
    expect_usage_error({"--shared", "--permits", "2", "job", "true"},
                       "--shared does not combine with --permits");
    setenv("REDLOCK_PERMITS", "3", 1);
    expect_usage_error({"--shared", "job", "true"},
                       "--shared does not combine with REDLOCK_PERMITS above 1");
    unsetenv("REDLOCK_PERMITS");
    EXPECT_TRUE(
        parse({"--shared", "-u", "redis://a", "-u", "redis://b", "-u", "redis://c", "job", "true"})
            .run.shared);
}

TEST_F(Cli, BadEnvironmentValuesAreUsageErrors) {
    setenv("REDLOCK_TTL", "5x", 1);
    expect_usage_error({"j", "x"}, "for REDLOCK_TTL");
}

// Replacing what is there would be wrong (root replaced /dev/null itself), and it is refused
// before the lock is taken, not found out after the command ran. A missing file is created.
TEST_F(Cli, MetricsFileThatIsNotARegularFileIsAUsageError) {
    expect_usage_error({"--metrics-file", "/dev/null", "job", "true"}, "'/dev/null' is a device");
    expect_usage_error({"--metrics-file", "/", "job", "true"}, "is a directory");
    setenv("REDLOCK_METRICS_FILE", "/dev/null", 1);
    expect_usage_error({"job", "true"}, "REDLOCK_METRICS_FILE '/dev/null' is a device");
    unsetenv("REDLOCK_METRICS_FILE");
    // A missing file is created; a missing directory is refused before anything runs.
    EXPECT_EQ(parse({"--metrics-file", "/tmp/redlock-run-no-such.prom", "job", "true"})
                  .run.job.metrics_file,
              "/tmp/redlock-run-no-such.prom");
    expect_usage_error({"--metrics-file", "/nonexistent/x.prom", "job", "true"},
                       "--metrics-file '/nonexistent/x.prom': its directory '/nonexistent' does "
                       "not exist");
}

// The heartbeat file is the command's to touch: a place it cannot be is refused at once.
TEST_F(Cli, AHeartbeatFileInAMissingDirectoryIsAUsageError) {
    expect_usage_error(
        {"--heartbeat-file", "/nonexistent/beat", "--heartbeat-timeout", "1m", "job", "true"},
        "--heartbeat-file '/nonexistent/beat': its directory '/nonexistent' does "
        "not exist");
    EXPECT_EQ(parse({"--heartbeat-file", "/tmp/beat", "--heartbeat-timeout", "1m", "job", "true"})
                  .run.job.heartbeat_file,
              "/tmp/beat");
}

TEST_F(Cli, ShellBeforeName) {
    Invocation inv = parse({"-c", "echo hi | wc -c", "job"});
    EXPECT_EQ(inv.run.name, "job");
    EXPECT_EQ(inv.run.command, (Args{"/bin/sh", "-c", "echo hi | wc -c"}));
    EXPECT_EQ(parse({"--shell", "true", "job"}).run.command, (Args{"/bin/sh", "-c", "true"}));
}

TEST_F(Cli, ShellAfterNameAsFlockDoes) {
    EXPECT_EQ(parse({"job", "-c", "echo hi"}).run.command, (Args{"/bin/sh", "-c", "echo hi"}));
    EXPECT_EQ(parse({"job", "--shell", "a"}).run.command, (Args{"/bin/sh", "-c", "a"}));
    EXPECT_EQ(parse({"job", "--shell=a b"}).run.command, (Args{"/bin/sh", "-c", "a b"}));
    // "-c" later in the command is the command's own.
    EXPECT_EQ(parse({"job", "sh", "-c", "x"}).run.command, (Args{"sh", "-c", "x"}));
}

TEST_F(Cli, ShellMisuseIsAUsageError) {
    expect_usage_error({"-c", "a", "job", "-c", "b"}, "twice");
    expect_usage_error({"-c", "a", "job", "extra"}, "not both");
    expect_usage_error({"job", "-c", "a", "extra"}, "not both");
    expect_usage_error({"job", "-c"}, "needs a value");
    expect_usage_error({"-c", "", "job"});
    expect_usage_error({"job", "-c", ""});
}

TEST_F(Cli, MissingNameOrCommand) {
    expect_usage_error({}, "NAME");
    expect_usage_error({"-t", "5s"}, "NAME");
    expect_usage_error({"--"}, "NAME");
    expect_usage_error({"job"}, "COMMAND");
    expect_usage_error({"job", "--"}, "COMMAND");
    expect_usage_error({"", "true"}, "empty");
}

TEST_F(Cli, UnknownOptionsAndMissingValues) {
    expect_usage_error({"--bogus", "job", "true"}, "--bogus");
    expect_usage_error({"-x", "job", "true"}, "-x");
    expect_usage_error({"-qx", "job", "true"}, "-x");
    expect_usage_error({"--ttl"}, "needs a value");
    expect_usage_error({"-t"}, "needs a value");
    expect_usage_error({"--quiet=yes", "job", "true"}, "takes no value");
}

TEST_F(Cli, BadDurations) {
    for (const char* bad : {"0", "-1s", "5x", "99999999999999999999", "1.0005s", ""}) {
        expect_usage_error({"-t", bad, "job", "true"}, "--ttl");
        expect_usage_error({"--kill-after", bad, "job", "true"}, "--kill-after");
        expect_usage_error({"--connect-timeout", bad, "job", "true"}, "--connect-timeout");
        expect_usage_error({"--command-timeout", bad, "job", "true"}, "--command-timeout");
        // An empty --wait means "do not wait", as an empty REDLOCK_WAIT does, and "0" is a
        // single try as with flock -w 0.
        if (*bad && std::string(bad) != "0")
            expect_usage_error({"-w", bad, "job", "true"}, "--wait");
    }
}

TEST_F(Cli, WaitZeroIsASingleTry) {
    for (const char* zero : {"0", "0s", "0ms"})
        EXPECT_FALSE(parse({"-w", zero, "j", "x"}).run.wait);
}

TEST_F(Cli, RenewEveryMustLeaveRoomForRetries) {
    expect_usage_error({"-t", "2s", "--renew-every", "1001ms", "job", "true"}, "--renew-every");
    EXPECT_EQ(parse({"-t", "2s", "--renew-every", "1s", "j", "x"}).run.renew_every,
              milliseconds(1000));
    expect_usage_error({"-t", "2s", "--renew-every", "2s", "job", "true"}, "--renew-every");
    expect_usage_error({"-t", "2s", "--renew-every", "3s", "job", "true"}, "--renew-every");
    expect_usage_error({"-t", "50ms", "job", "true"}, "--ttl");
}

TEST_F(Cli, BadValues) {
    expect_usage_error({"-E", "256", "job", "true"}, "--conflict-exit-code");
    expect_usage_error({"-E", "-1", "job", "true"}, "--conflict-exit-code");
    expect_usage_error({"-E", "x", "job", "true"}, "--conflict-exit-code");
    expect_usage_error({"--on-lost", "stop", "job", "true"}, "--on-lost");
    expect_usage_error({"-u", "http://x", "job", "true"}, "Redis URL");
    expect_usage_error({"-u", "redis://h:99999", "job", "true"}, "port");
    expect_usage_error({"-u", "redis://[::1", "job", "true"});
}

TEST_F(Cli, HelpAndVersion) {
    Invocation help = parse({"--help"});
    EXPECT_EQ(help.action, Action::help);
    EXPECT_NE(help.text.find("NAME"), std::string::npos);
    EXPECT_NE(help.text.find("--ttl"), std::string::npos);
    EXPECT_NE(help.text.find("Exit codes"), std::string::npos);
    EXPECT_EQ(parse({"-h"}).action, Action::help);
    Invocation version = parse({"--version"});
    EXPECT_EQ(version.action, Action::version);
    EXPECT_EQ(version.text.rfind("redlock-run ", 0), 0u);
    // After NAME, --help is the command's.
    EXPECT_EQ(parse({"job", "ls", "--help"}).action, Action::run);
}

TEST_F(Cli, PasswordFromTheEnvironment) {
    setenv("REDISCLI_AUTH", "envpw", 1);
    EXPECT_EQ(parse({"j", "x"}).run.conn.endpoint.password, "envpw");
    // A password in the URL wins over REDISCLI_AUTH.
    setenv("REDLOCK_URL", "redis://:urlpw@h", 1);
    EXPECT_EQ(parse({"j", "x"}).run.conn.endpoint.password, "urlpw");
}

TEST_F(Cli, PasswordFile) {
    char path[] = "/tmp/redlock-cli-test.XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << "filepw\r\nsecond line\n";
    setenv("REDISCLI_AUTH", "envpw", 1);
    EXPECT_EQ(parse({"--password-file", path, "j", "x"}).run.conn.endpoint.password, "filepw");
    std::ofstream(path) << "";
    expect_usage_error({"--password-file", path, "j", "x"}, "empty");
    unlink(path);
    expect_usage_error({"--password-file", path, "j", "x"}, path);
}

TEST_F(Cli, PasswordInACommandLineUrlWarns) {
    testing::internal::CaptureStderr();
    parse({"-u", "redis://:pw@h", "j", "x"});
    std::string warned = testing::internal::GetCapturedStderr();
    EXPECT_NE(warned.find("redlock-run: "), std::string::npos);
    EXPECT_NE(warned.find("ps"), std::string::npos);
    EXPECT_EQ(warned.find("pw@"), std::string::npos);

    setenv("REDLOCK_URL", "redis://:pw@h", 1);
    testing::internal::CaptureStderr();
    parse({"j", "x"});
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// Was inspect.bats "status takes the connection options before or after the subcommand word and
// after NAME" (the flags' places:
// SubcommandCli.StatusTakesOptionsBeforeAndAfterTheWordAndAfterName).
TEST_F(Cli, StatusTakesThePrefixFromTheEnvironmentAndTheFlagWins) {
    setenv("REDLOCK_PREFIX", "p:", 1);
    Invocation env = parse({"status", "x"});
    EXPECT_EQ(env.action, Action::status);
    EXPECT_EQ(env.inspect.name, "x");
    EXPECT_EQ(env.inspect.conn.prefix, "p:");
    EXPECT_EQ(parse({"status", "x", "--prefix=q:"}).inspect.conn.prefix, "q:");
}

// Were inspect.bats "a lock named like a subcommand is run with the explicit run form" and "a
// subcommand word after NAME is the command, not a subcommand".
TEST_F(Cli, ASubcommandWordIsALockNameAfterRunAndACommandWordAfterName) {
    Invocation named = parse({"run", "list", "--", "echo", "ran"});
    EXPECT_EQ(named.action, Action::run);
    EXPECT_EQ(named.run.name, "list");
    EXPECT_EQ(named.run.command, (Args{"echo", "ran"}));
    Invocation word = parse({"job", "echo", "status"});
    EXPECT_EQ(word.action, Action::run);
    EXPECT_EQ(word.run.name, "job");
    EXPECT_EQ(word.run.command, (Args{"echo", "status"}));
}
