// --help, --help-all and each subcommand's --help: one screen of the everyday options, every
// option in the full list, only its own options in a subcommand's, all of it 80 columns wide.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common_options.hpp"
#include "cli/inspect_options_cli.hpp"
#include "cli/option_table.hpp"
#include "cli/run_options_cli.hpp"

using redlock::Action;
using redlock::OptionSpec;
using redlock::OptionTable;

namespace {

std::string help(std::initializer_list<const char*> words) {
    std::vector<std::string> args{"redlock-run"};
    for (const char* w : words) args.emplace_back(w);
    redlock::Invocation inv = redlock::parse_command_line(args);
    EXPECT_EQ(inv.action, Action::help);
    return inv.text;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// A line wider than the terminal is split there, often mid-word.
void expect_fits(const std::string& text, std::size_t max_lines, const char* what) {
    std::vector<std::string> lines = lines_of(text);
    EXPECT_LE(lines.size(), max_lines) << what;
    for (const std::string& line : lines) EXPECT_LE(line.size(), 80u) << what << ": " << line;
}

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || c == '-';
}

// Where `text` names `option` ("--ttl", not inside "--ttl-max" or "x--ttl"); npos if nowhere.
std::size_t find_option(const std::string& text, const std::string& option) {
    for (std::size_t at = text.find(option); at != std::string::npos;
         at = text.find(option, at + 1)) {
        bool starts = at == 0 || !is_name_char(text[at - 1]);
        bool ends = at + option.size() == text.size() || !is_name_char(text[at + option.size()]);
        if (starts && ends) return at;
    }
    return std::string::npos;
}

bool mentions(const std::string& text, std::string_view long_name) {
    return find_option(text, fmt::format("--{}", long_name)) != std::string::npos;
}

// The options each add_*_options function declares.
struct Catalogs {
    redlock::RawOptions raw;
    redlock::InspectRawOptions inspect_raw;
    std::vector<OptionSpec> run, common, inspect;
    Catalogs() {
        OptionTable run_table(run), common_table(common), inspect_table(inspect);
        redlock::add_run_options(run_table, raw);
        redlock::add_common_options(common_table, raw);
        redlock::add_inspect_options(inspect_table, inspect_raw);
    }
    std::vector<OptionSpec> all() const {
        std::vector<OptionSpec> every = run;
        every.insert(every.end(), common.begin(), common.end());
        every.insert(every.end(), inspect.begin(), inspect.end());
        return every;
    }
};

}  // namespace

TEST(Help, FitsOneScreenOf80Columns) {
    expect_fits(help({"--help"}), 45, "--help");
    expect_fits(help({"-h"}), 45, "-h");
    expect_fits(help({"help"}), 45, "help");
}

TEST(Help, ListsTheEverydayOptionsBeforeAnyTopology) {
    std::string text = help({"--help"});
    std::size_t topology = std::string::npos;
    for (const char* word : {"quorum", "Quorum", "sentinel", "Sentinel", "cluster", "Cluster"})
        topology = std::min(topology, text.find(word));
    for (const char* option : {"--wait", "--ttl", "--conflict-exit-code", "--quiet"}) {
        std::size_t at = find_option(text, option);
        ASSERT_NE(at, std::string::npos) << option;
        EXPECT_LT(at, topology) << option;
    }
    // The topologies' own options are for --help-all.
    for (const char* option : {"node-timeout", "sentinel-password-file", "min-replicas", "cacert"})
        EXPECT_FALSE(mentions(text, option)) << option;
}

TEST(Help, EndsWithThePointerToTheFullList) {
    std::vector<std::string> lines = lines_of(help({"--help"}));
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines.back().find("redlock-run --help-all"), std::string::npos) << lines.back();
    EXPECT_NE(lines.back().find("man redlock-run"), std::string::npos) << lines.back();
}

// The one file the tool writes on its own (src/redis/script_memory.hpp), and where.
TEST(Help, HelpAllNamesTheScriptMemoryAndItsVariables) {
    std::string text = help({"--help-all"});
    EXPECT_NE(text.find("$XDG_CACHE_HOME/redlock-run"), std::string::npos);
    EXPECT_NE(text.find("~/.cache/redlock-run"), std::string::npos);
}

TEST(Help, HelpAllListsEveryOptionIn80Columns) {
    std::string text = help({"--help-all"});
    expect_fits(text, 250, "--help-all");
    for (const OptionSpec& spec : Catalogs().all()) {
        EXPECT_TRUE(mentions(text, spec.long_name)) << spec.long_name;
        if (!spec.short_name.empty()) {
            std::string both = fmt::format("-{}, --{}", spec.short_name, spec.long_name);
            EXPECT_NE(text.find(both), std::string::npos) << both;
        }
    }
    // The everyday options first.
    EXPECT_LT(find_option(text, "--wait"), find_option(text, "--node-timeout"));
    EXPECT_LT(find_option(text, "--ttl"), find_option(text, "--renew-every"));
    // Wherever it is given.
    EXPECT_EQ(help({"status", "--help-all"}), text);
}

TEST(Help, EachSubcommandHasItsOwn) {
    struct Expected {
        const char* word;
        std::vector<std::string_view> own;
    };
    Catalogs catalogs;
    for (const Expected& sub :
         {Expected{"status", {"json"}}, Expected{"list", {"json", "names", "last-runs"}},
          Expected{"release", {"token", "force"}}, Expected{"history", {"limit", "json"}}}) {
        std::string text = help({sub.word, "--help"});
        expect_fits(text, 30, sub.word);
        EXPECT_EQ(text.rfind(fmt::format("Usage: redlock-run {}", sub.word), 0), 0u) << text;
        for (const OptionSpec& spec : catalogs.inspect) {
            bool own = std::find(sub.own.begin(), sub.own.end(), spec.long_name) != sub.own.end();
            EXPECT_EQ(mentions(text, spec.long_name), own) << sub.word << " " << spec.long_name;
        }
        // The connection options it takes, at least by name.
        for (const OptionSpec& spec : catalogs.common)
            if (spec.long_name != "help-all" && spec.long_name != "version") {
                EXPECT_TRUE(mentions(text, spec.long_name)) << sub.word << " " << spec.long_name;
            }
        // None of the run's.
        for (const OptionSpec& spec : catalogs.run)
            EXPECT_FALSE(mentions(text, spec.long_name)) << sub.word << " " << spec.long_name;
    }
    // After NAME too.
    EXPECT_EQ(help({"status", "job", "--help"}), help({"status", "--help"}));
}
