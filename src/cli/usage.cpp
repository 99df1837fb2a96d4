#include "cli/usage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <span>
#include <string>

namespace redlock {
namespace {

// Where an option's description starts; names wider than this put it on the next line.
constexpr std::size_t description_column = 30;

struct Brief {
    std::string_view key;   // the option's long name
    std::string_view text;  // what --help says of it: one line where possible
};

// The options --help shows, in this order: what a cron line or a deploy script needs. Each is
// listed again first in --help-all, with its whole description.
constexpr std::array<Brief, 17> everyday = {{
    {"wait", "Wait up to DURATION or 'forever'; default: no wait"},
    {"no-wait", "Exit 75 at once if busy (default; flock's -n)"},
    {"ttl", "Lock TTL, renewed while COMMAND runs (default 30s)"},
    {"conflict-exit-code", "Exit with N when the lock is busy (default 75)"},
    {"quiet", "Say nothing when the lock is busy"},
    {"shell", "Run CMD with /bin/sh -c instead of COMMAND ARGS"},
    {"shared", "Hold NAME shared with other -s runs (flock's -s)"},
    {"url",
     "Redis URL (default redis://127.0.0.1:6379); Sentinel, Cluster, TLS, "
     "quorum: see --help-all"},
    {"min-hold", "Hold at least DURATION; late crons elsewhere skip"},
    {"once-per", "Run at most once per DURATION slot (Redis's clock)"},
    {"max-runtime", "Stop COMMAND after DURATION and exit 124"},
    {"metrics-file", "Update FILE (Prometheus text) after each run"},
    {"prefix", "Prepend PREFIX to NAME to form the Redis key"},
    {"verbose", "Report acquire, renew and release with timings"},
    {"help", "Show this help and exit"},
    {"help-all", "Show every option and exit"},
    {"version", "Show the version and exit"},
}};

struct SubcommandHelp {
    std::string_view name;
    std::string_view usage;  // after "Usage: "
    std::string_view about;
    std::array<Brief, 3> options;  // its own; unused entries have an empty key
};

constexpr std::array<SubcommandHelp, 4> subcommands = {{
    {"status",
     "redlock-run status [OPTIONS] [--json] NAME",
     "Shows whether the lock NAME is held and by whom: host, pid and user, the command line "
     "(when the run recorded it), since when, the TTL left, the fence and the token. Exits 0 when "
     "held, 1 when free.",
     {{{"json", "Print JSON (fields: man 7 redlock-run)"}}}},
    {"list",
     "redlock-run list [OPTIONS] [--json] [--last-runs] [PATTERN]\n"
     "       redlock-run list [OPTIONS] --names [PATTERN]",
     "Lists the held locks under the prefix whose NAME matches PATTERN (a Redis glob; "
     "default every lock).",
     {{{"json", "Print JSON (fields: man 7 redlock-run)"},
       {"last-runs", "Add each lock's last run and last success from its ledger"},
       {"names",
        "Print only the names of the locks ever taken (held or not), one a line, at "
        "most 1000"}}}},
    {"release",
     "redlock-run release [OPTIONS] --token TOKEN NAME\n"
     "       redlock-run release [OPTIONS] --force NAME",
     "Releases the lock NAME: with --token only if TOKEN is its current token (exit 1 when "
     "another token holds it), with --force whoever holds it.",
     {{{"token", "Release only if TOKEN is the lock's current token"},
       {"force", "Delete the lock whoever holds it"}}}},
    {"history",
     "redlock-run history [OPTIONS] [--limit N] [--json] NAME",
     "Prints the lock's run ledger, newest first: end time, outcome, exit status or signal, "
     "duration, fence, host, pid and user.",
     {{{"limit", "Show the N newest runs (default 20, at most 10000)"},
       {"json", "Print JSON (fields: man 7 redlock-run)"}}}},
}};

// The connection options a subcommand's --help shows with a description; it names the others.
constexpr std::array<Brief, 4> subcommand_common = {{
    {"url", "Redis URL (default redis://127.0.0.1:6379; every form in --help-all)"},
    {"prefix", "Prepend PREFIX to NAME to form the Redis key"},
    {"verbose", "Say more (status: the whole token)"},
    {"help", "Show this help and exit"},
}};

constexpr const char* usage_all =
    "Usage: redlock-run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock-run [OPTIONS] NAME [OPTIONS] -- COMMAND [ARGS...]\n"
    "       redlock-run [OPTIONS] -c 'SHELL COMMAND' NAME\n"
    "       redlock-run run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock-run status [OPTIONS] [--json] NAME\n"
    "       redlock-run list [OPTIONS] [--json] [--last-runs] [PATTERN]\n"
    "       redlock-run list [OPTIONS] --names [PATTERN]\n"
    "       redlock-run release [OPTIONS] (--token TOKEN | --force) NAME\n"
    "       redlock-run history [OPTIONS] [--limit N] [--json] NAME\n";

constexpr const char* usage_brief =
    "Usage: redlock-run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock-run [OPTIONS] -c 'SHELL COMMAND' NAME\n"
    "       redlock-run status|list|release|history [OPTIONS] ...  (each has --help)\n";

constexpr const char* about =
    "Runs COMMAND while holding the Redis lock NAME, so that only one instance runs at a time "
    "across hosts, and exits with COMMAND's status. A busy lock is not waited for unless -w "
    "DURATION is given: the run exits 75 at once.";

constexpr const char* durations =
    "DURATION: a number and a unit (ms, s, m, h, d), combinable: 250ms, 1.5s, 5m, 1h30m; a bare "
    "number is seconds (0.5 is 500ms).";

constexpr const char* exit_codes_brief =
    "Exit codes: COMMAND's own (128+N if killed by signal N); 75 lock busy (-E); 64 usage; 69 "
    "Redis unreachable; 76 lock lost; 124 --max-runtime exceeded; 126 command not executable; "
    "127 command not found.";

constexpr const char* exit_codes_all =
    "Exit codes: COMMAND's own status (128+N if killed by signal N); 75 lock busy (-E); 64 "
    "usage; 65 key is not a lock; 69 Redis unreachable (or too few replicas for --min-replicas, "
    "or acquired too late to run safely); 70 internal; 71 no process for COMMAND (fork failed: "
    "a process limit); 76 lock lost; 77 auth refused; 78 TLS verification failed; 79 stuck "
    "(--heartbeat-timeout, --max-renewals); 124 --max-runtime exceeded; 126 command not "
    "executable; 127 command not found. status: 0 held, 1 free; release --token: 1 when another "
    "token holds the lock.";

constexpr const char* files_all =
    "Files: $XDG_CACHE_HOME/redlock-run (else ~/.cache/redlock-run) remembers which scripts "
    "each Redis server ran, so that the first run on a server sends them whole at once rather "
    "than ask for them by digest first; a hint only: safe to delete, and unused where the "
    "directory is not this user's alone.";

// Joins two words that a line must not break between ("[env: REDLOCK_TTL]").
constexpr char glue = '\x01';

// Appends `text` to `out`, whose last line is `column` characters wide so far, broken at spaces
// so that no line is wider than help_width (a word is never split); the lines it adds start
// with `indent` spaces. Ends the line.
void wrap(std::string& out, std::string_view text, std::size_t column, std::size_t indent) {
    bool line_has_word = false;
    while (!text.empty()) {
        std::size_t space = text.find(' ');
        std::string_view word = text.substr(0, space);
        text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
        if (word.empty()) continue;
        if (line_has_word && column + 1 + word.size() > help_width) {
            out += '\n';
            out.append(indent, ' ');
            column = indent;
            line_has_word = false;
        }
        if (line_has_word) {
            out += ' ';
            ++column;
        }
        for (char c : word) out += c == glue ? ' ' : c;
        column += word.size();
        line_has_word = true;
    }
    out += '\n';
}

void paragraph(std::string& out, std::string_view text) {
    wrap(out, text, 0, 0);
}

// "  -t, --ttl DURATION", or "      --min-hold DURATION", then the description.
void option_line(std::string& out, const OptionSpec& spec, std::string_view description) {
    std::string names =
        spec.short_name.empty() ? std::string(6, ' ') : fmt::format("  -{}, ", spec.short_name);
    names += fmt::format("--{}", spec.long_name);
    if (!spec.placeholder.empty()) names += fmt::format(" {}", spec.placeholder);
    out += names;
    if (names.size() + 2 > description_column) {
        out += '\n';
        out.append(description_column, ' ');
    } else {
        out.append(description_column - names.size(), ' ');
    }
    wrap(out, description, description_column, description_column);
}

// The option whose long name is `key`, or nullptr.
const OptionSpec* option(const std::vector<OptionSpec>& catalog, std::string_view key) {
    return find_option(catalog, key, true);
}

// Whether the subcommands take the option: those every command takes, and the connection's.
bool for_every_command(const OptionSpec& spec) {
    return spec.group.empty() || spec.group == "Connection options" ||
           spec.group.starts_with("TLS");
}

}  // namespace

std::string help_text(const std::vector<OptionSpec>& catalog) {
    std::string out = usage_brief;
    out += '\n';
    paragraph(out, about);
    out += "\nEveryday options:\n";
    for (const Brief& brief : everyday)
        if (const OptionSpec* spec = option(catalog, brief.key))
            option_line(out, *spec, brief.text);
    out += '\n';
    paragraph(out, durations);
    paragraph(out, exit_codes_brief);
    out += "\nEvery option: redlock-run --help-all. Everything else: man redlock-run.\n";
    return out;
}

std::string help_all_text(const std::vector<OptionSpec>& catalog) {
    std::string out = usage_all;
    out += '\n';
    paragraph(out, about);
    paragraph(out, durations);
    auto described = [](const OptionSpec& spec) {
        return spec.env.empty() ? std::string(spec.description)
                                : fmt::format("{} [env:{}{}]", spec.description, glue, spec.env);
    };
    auto is_everyday = [](const OptionSpec& spec) {
        return std::any_of(everyday.begin(), everyday.end(),
                           [&](const Brief& b) { return b.key == spec.long_name; });
    };
    out += "\nEveryday options:\n";
    for (const Brief& brief : everyday)
        if (const OptionSpec* spec = option(catalog, brief.key))
            option_line(out, *spec, described(*spec));
    // The others, by group, in the order the groups are declared.
    std::vector<std::string_view> groups;
    for (const OptionSpec& spec : catalog)
        if (!is_everyday(spec) &&
            std::find(groups.begin(), groups.end(), spec.group) == groups.end())
            groups.push_back(spec.group);
    for (std::string_view group : groups) {
        out += fmt::format("\n{}:\n", group.empty() ? "Other options" : group);
        for (const OptionSpec& spec : catalog)
            if (spec.group == group && !is_everyday(spec)) option_line(out, spec, described(spec));
    }
    out += '\n';
    paragraph(out, exit_codes_all);
    out += '\n';
    paragraph(out, files_all);
    out += "\nEvery detail: man redlock-run.\n";
    return out;
}

std::string subcommand_help_text(std::string_view subcommand,
                                 const std::vector<OptionSpec>& catalog) {
    auto sub = std::find_if(subcommands.begin(), subcommands.end(),
                            [&](const SubcommandHelp& s) { return s.name == subcommand; });
    if (sub == subcommands.end()) return help_text(catalog);
    std::string out = fmt::format("Usage: {}\n\n", sub->usage);
    paragraph(out, sub->about);
    out += "\nOptions:\n";
    std::vector<std::string_view> shown;
    for (const auto& list :
         {std::span<const Brief>(sub->options), std::span<const Brief>(subcommand_common)})
        for (const Brief& brief : list)
            if (const OptionSpec* spec = brief.key.empty() ? nullptr : option(catalog, brief.key)) {
                option_line(out, *spec, brief.text);
                shown.push_back(spec->long_name);
            }
    std::string others = "Also the other connection options:";
    for (const OptionSpec& spec : catalog)
        if (for_every_command(spec) && spec.long_name != "help-all" &&
            spec.long_name != "version" &&
            std::find(shown.begin(), shown.end(), spec.long_name) == shown.end())
            others += fmt::format(" --{},", spec.long_name);
    others.back() = ';';
    others += " see redlock-run --help-all.";
    out += '\n';
    paragraph(out, others);
    return out;
}

}  // namespace redlock
