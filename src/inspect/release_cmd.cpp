// release: end a lock by hand. --token T is the safe form (compare-and-delete through the same
// script a run uses, so waiters are woken); --force deletes whatever holds the lock, for a holder
// that is gone and whose token nobody has. The lock interface (lock/inspector.hpp) does it on
// every topology; this says what it did: per node where several nodes decide.
#include <fmt/format.h>

#include <cstdio>

#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "inspect/permits_report.hpp"
#include "lock/inspector.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

void say(const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
}

// "deploy@web-2 pid 4120 (command 'backup --full', token 3f2a9c1e...)" or
// "an unknown holder (token 3f2a9c1e...)".
std::string whose(const LockState& lock, bool verbose) {
    std::string token = shown_token(lock.token, verbose);
    if (!lock.holder) return fmt::format("an unknown holder (token {})", token);
    // The command line is recorded only with --hold-info.
    if (lock.holder->command.empty()) return fmt::format("{} (token {})", holder_text(lock), token);
    return fmt::format("{} (command '{}', token {})", holder_text(lock),
                       printable(lock.holder->command), token);
}

// "released", "not held", "held by another token; left alone", "unreachable (...)".
std::string node_outcome(const NodeReleased& node, bool force, bool verbose) {
    if (!node.result) return fmt::format("unreachable ({})", printable(node.error));
    switch (*node.result) {
        case ReleaseResult::released:
            if (force && !node.removed.empty() && node.removed.front().permit == 0)
                return fmt::format("released {} shared holder{}", node.removed.size(),
                                   node.removed.size() == 1 ? "" : "s");
            if (force && !node.removed.empty()) {
                std::string permits;
                for (const PermitHolder& h : node.removed)
                    permits += fmt::format("{}{}", permits.empty() ? "" : ", ", h.permit);
                return fmt::format("released {} permit holder{} (permit{} {})", node.removed.size(),
                                   node.removed.size() == 1 ? "" : "s",
                                   node.removed.size() == 1 ? "" : "s", permits);
            }
            if (force) return fmt::format("released (token {})", shown_token(node.token, verbose));
            return "released";
        case ReleaseResult::absent:
            return "not held";
        case ReleaseResult::not_owner:
            break;
    }
    return "held by another token; left alone";
}

// Several nodes decide: each node's outcome, then on how many the lock went. A node that did not
// answer may still hold it (69, the others are released); --token T that no node held while some
// held another token is NotOwner.
int report_per_node(const ReleaseReport& report, const InspectOptions& options) {
    const LockKeys& keys = report.lock.keys;
    const bool verbose = options.conn.verbose;
    std::size_t released = 0, foreign = 0, failed = 0;
    const NodeReleased* first_failed = nullptr;
    for (const NodeReleased& node : report.per_node) {
        say(fmt::format("node {}: {}", printable(node.endpoint),
                        node_outcome(node, !options.token, verbose)));
        if (!node.result) {
            if (failed++ == 0) first_failed = &node;
        } else if (*node.result == ReleaseResult::released) {
            ++released;
        } else if (*node.result == ReleaseResult::not_owner) {
            ++foreign;
        }
    }
    const std::size_t n = report.per_node.size();
    // --force on a permits lock: every holder that some node had, once.
    for (const PermitHolder& h : report.removed)
        say(fmt::format("released lock '{}' {}", printable(keys.name),
                        permit_holder_line(report.lock, h, verbose)));
    say(fmt::format("lock '{}': released on {} of {} nodes", printable(keys.name), released, n));
    if (first_failed)
        throw RedisUnavailable(fmt::format(
            "lock '{}' may still be held on {} of {} nodes that did not answer; first error: {}",
            keys.key, failed, n, first_failed->error));
    if (options.token && released == 0 && foreign > 0)
        throw NotOwner(
            fmt::format("lock '{}' is held by another token than {} on {} of {} nodes; "
                        "not released",
                        printable(keys.name), shown_token(*options.token, verbose), foreign, n));
    return exit_code::ok;
}

}  // namespace

int release_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    return release_command(options, *make_inspector(options.conn));
}

int release_command(const InspectOptions& options, LockInspector& inspector) {
    const bool verbose = options.conn.verbose;
    LockKeys keys = LockKeys::make(options.name, options.conn.prefix);
    ReleaseReport report = options.token ? inspector.release_token(keys, *options.token)
                                         : inspector.force_release(keys);
    if (report.agreement) return report_per_node(report, options);

    const std::string name = printable(keys.name);
    if (report.result == ReleaseResult::absent) {
        say(fmt::format("lock '{}' is not held; nothing to release", name));
        return exit_code::ok;
    }
    // A permits lock (--permits N) or a shared lock: its holders, not its key, were released.
    const bool holders = report.permits > 0 || report.shared;
    if (options.token) {
        const std::string token = shown_token(*options.token, verbose);
        if (report.result == ReleaseResult::released) {
            if (report.permits > 0)
                say(fmt::format("released the permit of token {} of lock '{}'", token, name));
            else if (report.shared)
                say(fmt::format("released the shared hold of token {} on lock '{}'", token, name));
            else
                say(fmt::format("released lock '{}'", name));
            return exit_code::ok;
        }
        std::string now = report.holders_now ? permits_summary(*report.holders_now) : "";
        if (report.permits > 0)
            throw NotOwner(
                fmt::format("no permit of lock '{}' ({}) is held by token {}; not "
                            "released",
                            name, now, token));
        if (report.shared)
            throw NotOwner(fmt::format("lock '{}' ({}) is not held by token {}; not released", name,
                                       now, token));
        throw NotOwner(fmt::format("lock '{}' is held by {}, not by token {}; not released", name,
                                   whose(report.lock, verbose), token));
    }
    if (holders) {
        for (const PermitHolder& h : report.removed)
            say(fmt::format("released lock '{}' {}", name,
                            permit_holder_line(report.lock, h, verbose)));
        return exit_code::ok;
    }
    const LockState& was = report.lock;
    say(fmt::format("released lock '{}' held by {}, {}", name, whose(was, verbose),
                    was.pttl_ms >= 0 ? "which had " + ttl_text(was) + " left"
                                     : std::string("which had no expiry")));
    return exit_code::ok;
}

}  // namespace redlock
