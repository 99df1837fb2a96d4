// The README and the reference page against what the binary parses with: each option's
// environment variable as the option catalog declares it (the catalog apply_environment reads),
// and each limit they state as parse_command_line enforces it, one row a statement. A statement
// the documents no longer make, or that the binary no longer keeps, fails here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common_options.hpp"
#include "cli/inspect_options_cli.hpp"
#include "cli/option_table.hpp"
#include "cli/run_options_cli.hpp"
#include "util/errors.hpp"

using namespace redlock;

namespace {

std::string source_file(const std::string& relative) {
    std::ifstream in(std::string(REDLOCK_SOURCE_DIR) + "/" + relative, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + relative);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// From the line `first` (included) to the next line that starts with `next` (excluded).
std::string part(const std::string& text, const std::string& first, const std::string& next) {
    std::size_t from = text.find("\n" + first + "\n");
    if (from == std::string::npos) throw std::runtime_error("no line '" + first + "'");
    std::size_t to = text.find("\n" + next, from + first.size() + 2);
    return text.substr(from + 1, to == std::string::npos ? std::string::npos : to - from);
}

// The words roff source shows, roughly as man renders them: the arguments of the font macros
// (those of the alternating ones glued together), text lines as they are, other requests and
// comments dropped, escapes undone, lines joined with a space.
std::string plain(const std::string& roff) {
    std::istringstream lines(roff);
    std::string line, out;
    while (std::getline(lines, line)) {
        std::string words = line;
        if (line.starts_with(".")) {
            std::size_t space = line.find(' ');
            std::string macro = line.substr(1, space == std::string::npos ? space : space - 1);
            std::string args = space == std::string::npos ? "" : line.substr(space + 1);
            static const std::set<std::string> joined = {"B", "I"};
            static const std::set<std::string> glued = {"BR", "RB", "BI", "IB", "IR", "RI"};
            if (!joined.contains(macro) && !glued.contains(macro)) continue;
            words.clear();
            bool quoted = false, first = true;
            for (char c : args) {
                if (c == '"') {
                    quoted = !quoted;
                } else if (c == ' ' && !quoted) {
                    if (joined.contains(macro) && !first) words += ' ';
                    first = true;
                } else {
                    if (first && joined.contains(macro) && !words.empty()) words += ' ';
                    words += c;
                    first = false;
                }
            }
        }
        if (!out.empty()) out += ' ';
        out += words;
    }
    for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{{"\\-", "-"},
                                                                            {"\\fR", ""},
                                                                            {"\\fP", ""},
                                                                            {"\\fB", ""},
                                                                            {"\\fI", ""},
                                                                            {"\\&", ""},
                                                                            {"\\%", ""},
                                                                            {"\\(aq", "'"},
                                                                            {"\\~", " "},
                                                                            {"\\e", "\\"}}) {
        for (std::size_t at = out.find(from); at != std::string::npos; at = out.find(from, at))
            out.replace(at, from.size(), to), at += to.size();
    }
    return std::regex_replace(out, std::regex(" +"), " ");
}

std::vector<std::string> matches(const std::string& text, const std::string& pattern) {
    std::vector<std::string> found;
    std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
         ++it)
        found.push_back((*it)[1]);
    return found;
}

// Long name (without dashes) -> variable ("" for none), of every option but the operator
// commands' own (--json, --token, ...), which OPERATOR COMMANDS documents.
std::map<std::string, std::string> catalog_variables() {
    static RawOptions raw;
    static InspectRawOptions inspect_raw;
    std::vector<OptionSpec> all, inspect;
    OptionTable table(all), inspect_table(inspect);
    add_run_options(table, raw);
    add_common_options(table, raw);
    add_inspect_options(inspect_table, inspect_raw);
    std::set<std::string> operator_only;
    for (const OptionSpec& spec : inspect) operator_only.insert(std::string(spec.long_name));
    std::map<std::string, std::string> variables;
    for (const OptionSpec& spec : all)
        if (!spec.long_name.empty() && !operator_only.contains(std::string(spec.long_name)))
            variables[std::string(spec.long_name)] = std::string(spec.env);
    return variables;
}

std::string reference() {
    return source_file("man/redlock-run.1");
}

// Each entry of the reference page's OPTIONS: long name -> its text, plain.
std::map<std::string, std::string> man_options() {
    std::string options = part(reference(), ".SH OPTIONS", ".SH ");
    std::map<std::string, std::string> entries;
    std::size_t at = options.find("\n.TP\n");
    while (at != std::string::npos) {
        std::size_t next = options.find("\n.TP\n", at + 1);
        std::string entry =
            options.substr(at + 5, next == std::string::npos ? next : next - at - 5);
        // The last entry of a list ends where the list does.
        for (const char* end : {"\n.SS ", "\n.PP\n"})
            if (std::size_t cut = entry.find(end); cut != std::string::npos) entry.resize(cut);
        std::string tag = entry.substr(0, entry.find('\n'));
        for (const std::string& name : matches(tag, R"(\\-\\-([a-z][a-z0-9-]*))"))
            entries[name] = plain(entry);
        at = next;
    }
    return entries;
}

std::map<std::string, std::string> man_variables() {
    std::map<std::string, std::string> variables;
    for (const auto& [name, text] : man_options()) {
        std::vector<std::string> env = matches(text, R"(Env: (REDLOCK_[A-Z_]+))");
        variables[name] = env.empty() ? "" : env.front();
    }
    return variables;
}

// The rows of README.md's options table, keyed by each long name in the first column; the value
// is the whole row.
std::map<std::string, std::string> readme_rows() {
    std::string options = part(source_file("README.md"), "## Options", "## ");
    std::map<std::string, std::string> rows;
    std::istringstream lines(options);
    std::string line;
    while (std::getline(lines, line)) {
        if (!line.starts_with("| `")) continue;
        std::string first = line.substr(1, line.find('|', 1) - 1);
        for (const std::string& name : matches(first, R"(--([a-z][a-z0-9-]*))")) rows[name] = line;
    }
    return rows;
}

std::map<std::string, std::string> readme_variables() {
    std::map<std::string, std::string> variables;
    for (const auto& [name, row] : readme_rows()) {
        std::size_t second = row.find('|', 1);
        std::string names = row.substr(1, second - 1);
        std::string cell = row.substr(second + 1, row.find('|', second + 1) - second - 1);
        std::vector<std::string> options = matches(names, R"(--([a-z][a-z0-9-]*))");
        std::vector<std::string> env = matches(cell, R"((REDLOCK_[A-Z_]+))");
        // "`--cert FILE`, `--key FILE` | `REDLOCK_TLS_CERT`, `REDLOCK_TLS_KEY`": in order.
        if (!env.empty() && env.size() != options.size())
            throw std::runtime_error("README row with " + std::to_string(options.size()) +
                                     " options and " + std::to_string(env.size()) +
                                     " variables: " + row);
        for (std::size_t i = 0; i < options.size(); ++i)
            if (options[i] == name) variables[name] = env.empty() ? "" : env[i];
    }
    return variables;
}

TEST(Docs, EachOptionsVariableInTheReadmeAndTheReferenceIsTheOneTheBinaryReads) {
    std::map<std::string, std::string> binary = catalog_variables();
    std::map<std::string, std::string> man = man_variables();
    std::map<std::string, std::string> readme = readme_variables();
    for (const auto& [name, env] : binary) {
        ASSERT_TRUE(man.contains(name)) << "--" << name << " is not in the man page's OPTIONS";
        EXPECT_EQ(man[name], env) << "--" << name << " in the man page's OPTIONS";
        ASSERT_TRUE(readme.contains(name)) << "--" << name << " is not in README.md's options";
        EXPECT_EQ(readme[name], env) << "--" << name << " in README.md's options table";
    }
    // Nothing documented that the binary does not have.
    for (const auto& [name, env] : man) EXPECT_TRUE(binary.contains(name)) << "--" << name;
    for (const auto& [name, env] : readme) EXPECT_TRUE(binary.contains(name)) << "--" << name;
}

TEST(Docs, TheReferencesEnvironmentSectionNamesEveryVariableOfAnOption) {
    std::string environment = plain(part(reference(), ".SS Read by redlock-run", ".SS "));
    std::map<std::string, std::string> same_as;
    std::regex entry(R"((REDLOCK_[A-Z_]+) Same as --([a-z][a-z0-9-]*)[.;])");
    for (auto it = std::sregex_iterator(environment.begin(), environment.end(), entry);
         it != std::sregex_iterator(); ++it)
        same_as[(*it)[1]] = (*it)[2];
    std::map<std::string, std::string> binary = catalog_variables();
    for (const auto& [name, env] : binary) {
        if (env.empty()) continue;
        auto documented = same_as.find(env);
        EXPECT_TRUE(documented != same_as.end() && documented->second == name)
            << env << " (--" << name << ") in ENVIRONMENT";
    }
    for (const auto& [env, name] : same_as) {
        auto option = binary.find(name);
        EXPECT_TRUE(option != binary.end() && option->second == env)
            << env << " is not the variable of --" << name;
    }
}

// "Every option except -c, ... can also be set with the environment variable shown": exactly the
// options without one.
TEST(Docs, TheReferenceNamesEveryOptionWithoutAVariable) {
    std::string intro = plain(part(reference(), ".SH OPTIONS", ".SS "));
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(intro, m, std::regex(R"(Every option except (.*?) can also be set)")))
        << intro;
    std::vector<OptionSpec> all;
    RawOptions raw;
    OptionTable table(all);
    add_run_options(table, raw);
    add_common_options(table, raw);
    std::set<std::string> named;
    for (const std::string& word : matches(m[1], R"((--?[a-zA-Z][a-z0-9-]*))")) {
        bool is_long = word.starts_with("--");
        const OptionSpec* spec = find_option(all, word.substr(is_long ? 2 : 1), is_long);
        ASSERT_NE(spec, nullptr) << word;
        named.insert(std::string(spec->long_name));
    }
    std::set<std::string> without;
    for (const auto& [name, env] : catalog_variables())
        if (env.empty()) without.insert(name);
    EXPECT_EQ(named, without);
}

// A statement of a limit: a phrase the README's row and the reference page's entry of `option`
// make, and the words at either side of the limit, one accepted and one refused.
struct Limit {
    std::string name;  // the GoogleTest name
    std::string option;
    std::string readme;  // in the README's row; empty: the README does not state it
    std::string man;     // in the OPTIONS entry, as plain() shows it
    std::vector<std::string> accepted;
    std::vector<std::string> refused;
};

[[maybe_unused]] void PrintTo(const Limit& limit, std::ostream* os) {
    *os << limit.name;
}

const std::vector<std::string> quorum = {"-u", "redis://a", "-u", "redis://b", "-u", "redis://c"};

std::vector<std::string> words(std::vector<std::string> options, bool in_quorum = false) {
    std::vector<std::string> w = {"redlock-run"};
    if (in_quorum) w.insert(w.end(), quorum.begin(), quorum.end());
    w.insert(w.end(), options.begin(), options.end());
    for (const char* tail : {"job", "--", "true"}) w.push_back(tail);
    return w;
}

// Clears every REDLOCK_* the shell or ctest set for the time of one row, then puts them back.
class NoVariables {
  public:
    NoVariables() {
        for (char** entry = environ; *entry; ++entry) {
            std::string e(*entry);
            if (e.starts_with("REDLOCK_"))
                saved_.emplace_back(e.substr(0, e.find('=')), e.substr(e.find('=') + 1));
        }
        for (const auto& [name, value] : saved_) unsetenv(name.c_str());
    }
    ~NoVariables() {
        for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    }
    NoVariables(const NoVariables&) = delete;
    NoVariables& operator=(const NoVariables&) = delete;

  private:
    std::vector<std::pair<std::string, std::string>> saved_;
};

class Limits : public testing::TestWithParam<Limit> {};

TEST_P(Limits, AreStatedAsTheBinaryKeepsThem) {
    const Limit& limit = GetParam();
    if (!limit.readme.empty()) {
        std::map<std::string, std::string> rows = readme_rows();
        ASSERT_TRUE(rows.contains(limit.option)) << limit.option;
        EXPECT_NE(rows[limit.option].find(limit.readme), std::string::npos)
            << "README.md's row of --" << limit.option << ": " << rows[limit.option];
    }
    std::map<std::string, std::string> entries = man_options();
    ASSERT_TRUE(entries.contains(limit.option)) << limit.option;
    EXPECT_NE(entries[limit.option].find(limit.man), std::string::npos)
        << "the man page's --" << limit.option << ": " << entries[limit.option];
    NoVariables clean;
    EXPECT_NO_THROW(parse_command_line(limit.accepted));
    EXPECT_THROW(parse_command_line(limit.refused), UsageError);
}

INSTANTIATE_TEST_SUITE_P(
    Docs, Limits,
    testing::Values(
        Limit{"RenewEveryAtMostHalfTheTtl", "renew-every", "at most half the TTL",
              "must be at most half of the TTL", words({"-t", "10s", "--renew-every", "5s"}),
              words({"-t", "10s", "--renew-every", "5001ms"})},
        Limit{"TtlAtLeast100ms", "ttl", "at least `100ms`", "Must be at least 100ms.",
              words({"-t", "100ms"}), words({"-t", "99ms"})},
        Limit{"NodeTimeoutAtMostATenthOfTheTtl", "node-timeout", "at most a tenth of the TTL",
              "It must be at most a tenth of --ttl",
              words({"-t", "10s", "--node-timeout", "1s"}, true),
              words({"-t", "10s", "--node-timeout", "1001ms"}, true)},
        Limit{"ReplicaTimeoutAtMostAQuarterOfTtlMinusRenewEvery", "replica-timeout",
              "at most (ttl − renew-every)/4", "At most a quarter of --ttl minus --renew-every",
              words({"-t", "10s", "--renew-every", "2s", "--min-replicas", "1", "--replica-timeout",
                     "2s"}),
              words({"-t", "10s", "--renew-every", "2s", "--min-replicas", "1", "--replica-timeout",
                     "2001ms"})},
        Limit{"ConflictExitCodeUpTo255", "conflict-exit-code", "(0-255)", "(0 to 255)",
              words({"-E", "255"}), words({"-E", "256"})},
        Limit{"PermitsUpTo1000", "permits", "(1-1000)", "(1 to 1000)", words({"--permits", "1000"}),
              words({"--permits", "1001"})},
        Limit{"MinReplicasUpTo100", "min-replicas", "(0-100)", "is 0 to 100",
              words({"--min-replicas", "100"}), words({"--min-replicas", "101"})},
        Limit{"OncePerFrom1s", "once-per", "(1s-366d)", "Between 1s and 366d.",
              words({"--once-per", "1s"}), words({"--once-per", "999ms"})},
        Limit{"OncePerUpTo366d", "once-per", "(1s-366d)", "Between 1s and 366d.",
              words({"--once-per", "366d"}), words({"--once-per", "367d"})},
        Limit{"SlotOffsetLessThanThePeriod", "slot-offset", "", "less than PERIOD.",
              words({"--once-per", "1h", "--slot-offset", "59m59s"}),
              words({"--once-per", "1h", "--slot-offset", "1h"})},
        Limit{"LedgerSizeUpTo10000", "ledger-size", "(0-10000; 0: none)",
              "(0 to 10000; 0 writes none)", words({"--ledger-size", "10000"}),
              words({"--ledger-size", "10001"})},
        Limit{"PingTimeoutFrom100ms", "ping-timeout", "(100ms-1m)", "(100ms to 1m)",
              words({"--ping", "http://h/x", "--ping-timeout", "100ms"}),
              words({"--ping", "http://h/x", "--ping-timeout", "99ms"})},
        Limit{"PingTimeoutUpToAMinute", "ping-timeout", "(100ms-1m)", "(100ms to 1m)",
              words({"--ping", "http://h/x", "--ping-timeout", "1m"}),
              words({"--ping", "http://h/x", "--ping-timeout", "1m1ms"})},
        Limit{"MaxRenewalsUpTo1000000", "max-renewals", "", "(0 to 1000000)",
              words({"--max-renewals", "1000000"}), words({"--max-renewals", "1000001"})}),
    [](const testing::TestParamInfo<Limit>& info) { return info.param.name; });

}  // namespace
