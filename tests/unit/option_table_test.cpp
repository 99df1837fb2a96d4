// The option table: one declaration read as a catalog for the scan, and as CLI11 options of which
// only the wanted ones are built, so that a run pays for the options it uses.
#include "option_table.hpp"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <cstdlib>

using redlock::add_options_from_environment;
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

TEST(OptionTable, OptionsSetThroughTheirVariableAreWanted) {
    Targets o;
    std::vector<OptionSpec> catalog;
    OptionTable table(catalog);
    declare(table, o);
    unsetenv("OPTION_TABLE_TEST_TTL");
    unsetenv("OPTION_TABLE_TEST_URL");
    setenv("OPTION_TABLE_TEST_CACERT", "/env-ca.pem", 1);

    std::set<std::string> wanted = {"quiet"};
    add_options_from_environment(catalog, wanted);
    EXPECT_EQ(wanted, (std::set<std::string>{"quiet", "cacert"}));

    CLI::App app;
    OptionTable cli(app, &wanted);
    declare(cli, o);
    app.parse(std::vector<std::string>{});
    EXPECT_EQ(o.cacert, "/env-ca.pem");
    EXPECT_TRUE(o.ttl.empty());
    unsetenv("OPTION_TABLE_TEST_CACERT");
}
