// The option table: one declaration read as a catalog for the scan, and as CLI11 options of which
// only the wanted ones are built, so that a run pays for the options it uses.
#include "cli/option_table.hpp"

#include "util/errors.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdlib>

using redlock::apply_environment;
using redlock::find_option;
using redlock::OptionSpec;
using redlock::OptionTable;

namespace {

struct Targets {
    std::string ttl;
    std::vector<std::string> urls;
    bool quiet = false;
    std::string cacert;
};

void declare(OptionTable& t, Targets& o) {
    t.option("-t,--ttl", o.ttl, "time to live", "OPTION_TABLE_TEST_TTL");
    t.option("-u,--url", o.urls, "where", "OPTION_TABLE_TEST_URL");
    t.flag("-q,--quiet", o.quiet, "say nothing");
    t.group("TLS", [&] { t.option("--cacert", o.cacert, "CA file", "OPTION_TABLE_TEST_CACERT"); });
}

std::vector<std::string> long_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app.get_options()) names.push_back(opt->get_lnames().front());
    return names;
}

}  // namespace

TEST(OptionTable, CatalogKnowsNamesValuesAndVariables) {
    Targets o;
    std::vector<OptionSpec> catalog;
    OptionTable table(catalog);
    declare(table, o);
    ASSERT_EQ(catalog.size(), 4u);

    const OptionSpec* ttl = find_option(catalog, "t", false);
    ASSERT_NE(ttl, nullptr);
    EXPECT_EQ(ttl, find_option(catalog, "ttl", true));
    EXPECT_TRUE(ttl->takes_value);
    EXPECT_EQ(ttl->env, "OPTION_TABLE_TEST_TTL");
    EXPECT_EQ(ttl->key(), "ttl");

    const OptionSpec* quiet = find_option(catalog, "quiet", true);
    ASSERT_NE(quiet, nullptr);
    EXPECT_FALSE(quiet->takes_value);
    EXPECT_TRUE(quiet->env.empty());

    const OptionSpec* cacert = find_option(catalog, "cacert", true);
    ASSERT_NE(cacert, nullptr);
    EXPECT_TRUE(cacert->short_name.empty());

    EXPECT_EQ(find_option(catalog, "ttl", false), nullptr);  // a long name is not a short one
    EXPECT_EQ(find_option(catalog, "q", true), nullptr);
    EXPECT_EQ(find_option(catalog, "wait", true), nullptr);
}

TEST(OptionTable, OnlyWantedOptionsReachCli11) {
    Targets o;
    CLI::App app;
    std::set<std::string> wanted = {"quiet", "cacert"};
    OptionTable table(app, &wanted);
    declare(table, o);
    EXPECT_EQ(long_names(app), (std::vector<std::string>{"help", "quiet", "cacert"}));

    app.parse(std::vector<std::string>{"/ca.pem", "--cacert", "-q"});  // CLI11 reads back to front
    EXPECT_TRUE(o.quiet);
    EXPECT_EQ(o.cacert, "/ca.pem");
    EXPECT_EQ(app.get_option("--cacert")->get_group(), "TLS");
    EXPECT_EQ(app.get_option("--quiet")->get_group(), "Options");
}

TEST(OptionTable, WithoutAWantedSetEveryOptionReachesCli11) {
    Targets o;
    CLI::App app;
    OptionTable table(app, nullptr);
    declare(table, o);
    EXPECT_EQ(long_names(app), (std::vector<std::string>{"help", "ttl", "url", "quiet", "cacert"}));
    EXPECT_EQ(app.get_option("--ttl")->get_envname(), "OPTION_TABLE_TEST_TTL");
}

// Sets a variable for one test and removes it afterwards, whatever the test does.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
    ~ScopedEnv() { unsetenv(name_); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    const char* name_;
};

std::vector<OptionSpec> catalog_of(Targets& o) {
    std::vector<OptionSpec> catalog;
    OptionTable table(catalog);
    declare(table, o);
    return catalog;
}

TEST(OptionTable, VariablesSetTheOptionsNotGivenOnTheCommandLine) {
    Targets o;
    std::vector<OptionSpec> catalog = catalog_of(o);
    ScopedEnv ttl("OPTION_TABLE_TEST_TTL", "5s");
    ScopedEnv url("OPTION_TABLE_TEST_URL", "redis://a,redis://b");
    ScopedEnv cacert("OPTION_TABLE_TEST_CACERT", "/env-ca.pem");
    o.cacert = "/given-ca.pem";  // as if CLI11 had parsed --cacert

    apply_environment(catalog, {"cacert"});
    EXPECT_EQ(o.ttl, "5s");
    EXPECT_EQ(o.urls, (std::vector<std::string>{"redis://a,redis://b"}));  // split later
    EXPECT_EQ(o.cacert, "/given-ca.pem");                                  // the command line wins
}

TEST(OptionTable, AnEmptyVariableCountsAsUnset) {
    Targets o;
    std::vector<OptionSpec> catalog = catalog_of(o);
    ScopedEnv ttl("OPTION_TABLE_TEST_TTL", "");
    ScopedEnv url("OPTION_TABLE_TEST_URL", "");
    apply_environment(catalog, {});
    EXPECT_TRUE(o.ttl.empty());
    EXPECT_TRUE(o.urls.empty());
}

TEST(OptionTable, AFlagVariableSaysYesOrNoInAnyCase) {
    Targets o;
    std::vector<OptionSpec> catalog;
    OptionTable table(catalog);
    table.flag("-q,--quiet", o.quiet, "say nothing", "OPTION_TABLE_TEST_QUIET");
    for (const char* yes : {"1", "true", "YES", "On"}) {
        ScopedEnv quiet("OPTION_TABLE_TEST_QUIET", yes);
        o.quiet = false;
        apply_environment(catalog, {});
        EXPECT_TRUE(o.quiet) << yes;
    }
    for (const char* no : {"0", "False", "no", "OFF"}) {
        ScopedEnv quiet("OPTION_TABLE_TEST_QUIET", no);
        o.quiet = true;
        apply_environment(catalog, {});
        EXPECT_FALSE(o.quiet) << no;
    }
    ScopedEnv quiet("OPTION_TABLE_TEST_QUIET", "maybe");
    try {
        apply_environment(catalog, {});
        FAIL() << "a flag variable of 'maybe' was accepted";
    } catch (const redlock::UsageError& e) {
        EXPECT_STREQ(e.what(),
                     "OPTION_TABLE_TEST_QUIET (--quiet) must be 1, true, yes, on, 0, false, no or "
                     "off, not 'maybe'");
    }
}

TEST(OptionTable, Cli11NeverReadsTheVariablesItself) {
    Targets o;
    ScopedEnv ttl("OPTION_TABLE_TEST_TTL", "5s");
    CLI::App app;
    std::set<std::string> wanted = {"ttl", "quiet"};
    OptionTable cli(app, &wanted);
    declare(cli, o);
    EXPECT_TRUE(app.get_option("--ttl")->get_envname().empty());
    app.parse(std::vector<std::string>{"-q"});
    EXPECT_TRUE(o.quiet);
    EXPECT_TRUE(o.ttl.empty());
}
