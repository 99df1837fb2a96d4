#include "cli/inspect_options_cli.hpp"

#include <fmt/format.h>

#include <cstddef>

#include "lock/ledger/ledger.hpp"
#include "util/errors.hpp"

namespace redlock {

void add_inspect_options(OptionTable& t, InspectRawOptions& o) {
    t.group("Operator command options", [&] {
        t.flag("--json", o.json, "status, list, history: print JSON (fields: man 7 redlock-run)");
        t.flag("--names", o.names,
               "list: print only the names of the locks ever taken (held or not), one a line, "
               "at most 1000 (for scripts and the shell completions)");
        t.option("--limit N", o.limit, "history: show the N newest runs (default 20)");
        t.flag("--last-runs", o.last_runs,
               "list: add each lock's last run and last success from its ledger");
        t.option("--token TOKEN", o.token,
                 "release: release only if TOKEN is the lock's current token");
        t.flag("--force", o.force, "release: delete the lock whoever holds it");
    });
}

InspectOptions inspect_options(Action action, const std::string& word, const CommonRawOptions& raw,
                               const InspectRawOptions& ir, const Scan& scan,
                               std::vector<std::string> operands) {
    // Run options (--ttl, --wait, ...) would be silently ignored here; refuse them instead.
    CommonRawOptions unused;
    InspectRawOptions unused_inspect;
    std::vector<OptionSpec> accepted;
    OptionTable table(accepted);
    add_common_options(table, unused);
    add_inspect_options(table, unused_inspect);
    for (const std::string& name : scan.given)
        if (!find_option(accepted, name, name.size() > 1))
            throw UsageError(
                fmt::format("option '--{}' is for running a command, not for '{}'", name, word));
    auto only_for = [&](const char* option, const char* commands) {
        if (scan.given.contains(option))
            throw UsageError(
                fmt::format("option '--{}' is only for {}, not for '{}'", option, commands, word));
    };

    InspectOptions o;
    o.conn = connection_options(raw, scan);
    o.json = ir.json;
    if (action != Action::history) only_for("limit", "history");
    if (action != Action::list) only_for("last-runs", "list");
    o.last_runs = ir.last_runs;
    if (action != Action::list) only_for("names", "list");
    if (action == Action::list) {
        if (ir.json && ir.names) throw UsageError("give 'list' either --json or --names, not both");
        o.names = ir.names;
        only_for("token", "release");
        only_for("force", "release");
        if (operands.size() > 1)
            throw UsageError(
                fmt::format("'list' takes at most one PATTERN, got {}", operands.size()));
        if (!operands.empty()) o.pattern = operands[0];
        if (o.pattern.empty()) throw UsageError("the list PATTERN must not be empty");
        return o;
    }
    if (operands.empty()) throw UsageError(fmt::format("'{}' needs the lock NAME", word));
    if (operands.size() > 1)
        throw UsageError(fmt::format("'{}' takes one lock NAME, got {}", word, operands.size()));
    o.name = operands[0];
    if (o.name.empty()) throw UsageError("the lock NAME must not be empty");
    if (action == Action::history && scan.given.contains("limit"))
        o.limit = static_cast<std::size_t>(
            int_option(ir.limit, "--limit", 1, static_cast<int>(ledger_size_max)));
    if (action == Action::status || action == Action::history) {
        only_for("token", "release");
        only_for("force", "release");
        return o;
    }
    only_for("json", "status, list and history");
    bool token = scan.given.contains("token");
    if (token == ir.force)
        throw UsageError(token ? "give either --token or --force to 'release', not both"
                               : "'release' needs --token T (release only if T is the current "
                                 "token) or --force (delete the lock whoever holds it)");
    if (token) {
        if (ir.token.empty()) throw UsageError("--token needs a non-empty token");
        o.token = ir.token;
    }
    o.force = ir.force;
    return o;
}

}  // namespace redlock
