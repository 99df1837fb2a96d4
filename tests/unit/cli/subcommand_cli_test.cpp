// The operator commands on the command line: where a subcommand word counts, where their options
// may go, and which options each refuses.
#include <gtest/gtest.h>

#include <initializer_list>

#include "cli/cli.hpp"
#include "util/errors.hpp"

using redlock::Action;
using redlock::Invocation;
using redlock::parse_command_line;
using redlock::UsageError;

namespace {

Invocation parse(std::initializer_list<const char*> words) {
    std::vector<std::string> args{"redlock-run"};
    for (const char* w : words) args.emplace_back(w);
    return parse_command_line(args);
}

void expect_usage_error(std::initializer_list<const char*> words) {
    EXPECT_THROW(parse(words), UsageError);
}

}  // namespace

TEST(SubcommandCli, StatusTakesOptionsBeforeAndAfterTheWordAndAfterName) {
    for (auto inv :
         {parse({"--prefix", "p:", "status", "job"}), parse({"status", "--prefix", "p:", "job"}),
          parse({"status", "job", "--prefix=p:"})}) {
        EXPECT_EQ(inv.action, Action::status);
        EXPECT_EQ(inv.inspect.name, "job");
        EXPECT_EQ(inv.inspect.conn.prefix, "p:");
        EXPECT_FALSE(inv.inspect.json);
    }
    EXPECT_TRUE(parse({"status", "job", "--json"}).inspect.json);
    EXPECT_TRUE(parse({"-v", "status", "job"}).inspect.conn.verbose);
}

TEST(SubcommandCli, TheWordCountsOnlyWhereNameWouldBe) {
    Invocation inv = parse({"job", "status"});
    EXPECT_EQ(inv.action, Action::run);
    EXPECT_EQ(inv.run.name, "job");
    inv = parse({"run", "status", "--", "true"});
    EXPECT_EQ(inv.action, Action::run);
    EXPECT_EQ(inv.run.name, "status");
    inv = parse({"--", "list", "true"});
    EXPECT_EQ(inv.action, Action::run);
    EXPECT_EQ(inv.run.name, "list");
}

TEST(SubcommandCli, ListTakesAnOptionalPattern) {
    Invocation inv = parse({"list"});
    EXPECT_EQ(inv.action, Action::list);
    EXPECT_EQ(inv.inspect.pattern, "*");
    EXPECT_EQ(parse({"list", "--json", "job-*"}).inspect.pattern, "job-*");
    expect_usage_error({"list", "a", "b"});
}

TEST(SubcommandCli, ReleaseNeedsExactlyOneOfTokenAndForce) {
    Invocation inv = parse({"release", "job", "--token", "abc"});
    EXPECT_EQ(inv.action, Action::release);
    ASSERT_TRUE(inv.inspect.token);
    EXPECT_EQ(*inv.inspect.token, "abc");
    EXPECT_FALSE(inv.inspect.force);
    inv = parse({"release", "--force", "job"});
    EXPECT_TRUE(inv.inspect.force);
    EXPECT_FALSE(inv.inspect.token);
    expect_usage_error({"release", "job"});
    expect_usage_error({"release", "job", "--token", "a", "--force"});
    expect_usage_error({"release", "job", "--token="});
}

TEST(SubcommandCli, DoubleDashEndsOptionsForANameStartingWithDash) {
    EXPECT_EQ(parse({"status", "--", "-odd"}).inspect.name, "-odd");
    EXPECT_EQ(parse({"release", "--force", "--", "--json"}).inspect.name, "--json");
}

TEST(SubcommandCli, RunOptionsAndOtherCommandsOptionsAreRefused) {
    expect_usage_error({"status", "--ttl", "5s", "job"});
    expect_usage_error({"--wait", "5s", "status", "job"});
    expect_usage_error({"list", "-q"});
    expect_usage_error({"release", "-c", "true", "job", "--force"});
    expect_usage_error({"status", "--token", "a", "job"});
    expect_usage_error({"list", "--force"});
    expect_usage_error({"release", "--json", "--force", "job"});
    expect_usage_error({"--json", "job", "--", "true"});
    expect_usage_error({"--force", "job", "--", "true"});
}

TEST(SubcommandCli, StatusAndReleaseNeedOneName) {
    expect_usage_error({"status"});
    expect_usage_error({"status", "a", "b"});
    expect_usage_error({"status", ""});
    expect_usage_error({"release", "--force"});
}

TEST(SubcommandCli, HelpWorksAfterTheWord) {
    EXPECT_EQ(parse({"status", "--help"}).action, Action::help);
}
