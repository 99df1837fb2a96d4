// The operator commands render what a LockInspector reports and never ask which topology it is:
// a fake inspector stands in for a quorum (reports with an agreement and each node's answer)
// and for one node, and the commands' output and exit status follow the report alone. The text
// and JSON of one node's reports are proved here too; inspect.bats keeps what needs real keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "inspect/inspect.hpp"
#include "inspect/permits_report.hpp"
#include "lock/inspector.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"

namespace redlock {
namespace {

LockState held_state(const LockKeys& keys, const std::string& token) {
    LockState s;
    s.keys = keys;
    s.type = "string";
    s.token = token;
    s.pttl_ms = 20'000;
    s.fence = 7;
    return s;
}

// Canned reports; any call not given one fails the test.
class FakeInspector final : public LockInspector {
  public:
    std::optional<LockReport> status_report;
    std::optional<ListReport> list_report;
    std::optional<ReleaseReport> release_report;
    std::vector<LedgerEntry> history_entries;  // newest first, as a ledger holds them
    std::size_t history_limit = 0;             // what history() was last asked for
    bool list_last_runs = false;               // what list() was last asked for

    LockReport status(const LockKeys&) override { return take(status_report); }
    ListReport list(const std::string&, const std::string&, bool last_runs) override {
        list_last_runs = last_runs;
        return take(list_report);
    }
    std::vector<std::string> names(const std::string&, const std::string&, std::size_t) override {
        return {"a", "b"};
    }
    ReleaseReport release_token(const LockKeys&, const std::string&) override {
        return take(release_report);
    }
    ReleaseReport force_release(const LockKeys&) override { return take(release_report); }
    std::vector<LedgerEntry> history(const LockKeys&, std::size_t limit) override {
        history_limit = limit;
        std::vector<LedgerEntry> newest = history_entries;
        if (newest.size() > limit) newest.resize(limit);
        return newest;
    }

  private:
    template <typename T>
    T take(std::optional<T>& r) {
        if (!r) throw std::logic_error("no canned report");
        return *r;
    }
};

InspectOptions options_for(const std::string& name) {
    InspectOptions o;
    o.name = name;
    return o;
}

// Three nodes: two hold token "t1" (a majority), the third did not answer.
LockReport majority_report(const LockKeys& keys) {
    LockReport r;
    r.lock = held_state(keys, "t1aaaaaaaaaa");
    r.held = true;
    r.agreement = Agreement{3, 2, 2};
    r.holding = 2;
    r.per_node = {{"n1:1", r.lock, ""}, {"n2:2", r.lock, ""}, {"n3:3", std::nullopt, "refused"}};
    return r;
}

TEST(InspectCommands, StatusShowsEachNodeWhereSeveralDecide) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.status_report = majority_report(keys);
    testing::internal::CaptureStdout();
    int code = status_command(options_for("job"), fake);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, exit_code::ok);
    EXPECT_NE(out.find("state:    held by a majority (2 of 3 nodes, 2 needed; 2 answered)\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("node n1:1: held, token t1aaaaaa..., ttl left"), std::string::npos) << out;
    EXPECT_NE(out.find("node n3:3: unreachable (refused)\n"), std::string::npos) << out;
}

TEST(InspectCommands, StatusOfOneNodeHasNoNodeLinesAndFollowsHeld) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.status_report.emplace();
    fake.status_report->lock.keys = keys;
    fake.status_report->lock.type = "none";
    testing::internal::CaptureStdout();
    int code = status_command(options_for("job"), fake);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, exit_code::lock_free);
    EXPECT_NE(out.find("state:    free\n"), std::string::npos) << out;
    EXPECT_EQ(out.find("node "), std::string::npos) << out;
}

TEST(InspectCommands, ListAddsTheNodesColumnOnlyWithAnAgreement) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.list_report.emplace();
    fake.list_report->locks.push_back({held_state(keys, "t1"), std::nullopt, std::nullopt, 2});
    InspectOptions o = options_for("");
    testing::internal::CaptureStdout();
    EXPECT_EQ(list_command(o, fake), exit_code::ok);
    std::string one = testing::internal::GetCapturedStdout();
    EXPECT_EQ(one.rfind("NAME  TTL ", 0), 0u) << one;

    fake.list_report->agreement = Agreement{3, 2, 3};
    testing::internal::CaptureStdout();
    EXPECT_EQ(list_command(o, fake), exit_code::ok);
    std::string several = testing::internal::GetCapturedStdout();
    EXPECT_EQ(several.rfind("NAME  NODES   TTL ", 0), 0u) << several;
    EXPECT_NE(several.find("\njob   2 of 3  "), std::string::npos) << several;
}

Waiters two_waiters() {
    Waiters w;
    w.redis_now_ms = 1'700'000'063'000;
    w.total = 2;
    w.waiting = {{"web-2", 4120, 1'700'000'000'000, false}, {"db\x1b[2J\"1", 77, 0, true}};
    return w;
}

TEST(InspectCommands, StatusListsTheWaitersInOrderEscaped) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.status_report.emplace();
    fake.status_report->lock = held_state(keys, "t1");
    fake.status_report->held = true;
    fake.status_report->waiters = two_waiters();
    testing::internal::CaptureStdout();
    EXPECT_EQ(status_command(options_for("job"), fake), exit_code::ok);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("waiting:  2\n"
                       "  1. web-2 pid 4120, waiting 1m3s, exclusive\n"
                       "  2. db\\x1b[2J\"1 pid 77, waiting for an unknown time, shared\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;

    InspectOptions o = options_for("job");
    o.json = true;
    testing::internal::CaptureStdout();
    EXPECT_EQ(status_command(o, fake), exit_code::ok);
    std::string json = testing::internal::GetCapturedStdout();
    EXPECT_NE(
        json.find("\"waiting\":2,\"waiters\":[{\"position\":1,\"host\":\"web-2\",\"pid\":4120,"
                  "\"since_ms\":1700000000000,\"waiting_ms\":63000,\"mode\":\"exclusive\"},"
                  "{\"position\":2,\"host\":\"db\\u001b[2J\\\"1\",\"pid\":77,\"since_ms\":0,"
                  "\"waiting_ms\":-1,\"mode\":\"shared\"}]"),
        std::string::npos)
        << json;
}

TEST(InspectCommands, StatusWithoutWaitersHasNoWaitingBlockButAnEmptyArray) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.status_report.emplace();
    fake.status_report->lock = held_state(keys, "t1");
    fake.status_report->held = true;
    testing::internal::CaptureStdout();
    status_command(options_for("job"), fake);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(out.find("waiting"), std::string::npos) << out;
    InspectOptions o = options_for("job");
    o.json = true;
    testing::internal::CaptureStdout();
    status_command(o, fake);
    std::string json = testing::internal::GetCapturedStdout();
    EXPECT_NE(json.find("\"waiting\":0,\"waiters\":[]"), std::string::npos) << json;
}

TEST(InspectCommands, AQuorumStatusSaysWhichNodesQueueItShows) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.status_report = majority_report(keys);
    fake.status_report->waiters = two_waiters();
    fake.status_report->waiters_from = "n1:1";
    testing::internal::CaptureStdout();
    status_command(options_for("job"), fake);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("waiting:  2 (queue of node n1:1)\n  1. web-2 pid 4120"), std::string::npos)
        << out;
    InspectOptions o = options_for("job");
    o.json = true;
    testing::internal::CaptureStdout();
    status_command(o, fake);
    std::string json = testing::internal::GetCapturedStdout();
    EXPECT_NE(json.find("\"waiters_from\":\"n1:1\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"waiting\":2,\"waiters\":[{\"position\":1"), std::string::npos) << json;
}

TEST(InspectCommands, ListLastRunsMarksAFreeLockWithALedgerFree) {
    FakeInspector fake;
    fake.list_report.emplace();
    LockState free;
    free.keys = LockKeys::make("quiet", "");
    free.type = "none";
    free.fence = 9;
    LedgerEntry ran;
    ran.outcome = "ran";
    ran.exit_status = 5;
    fake.list_report->locks.push_back({free, std::nullopt, LastRuns{ran, std::nullopt}, 0});
    InspectOptions o = options_for("");
    o.last_runs = true;
    testing::internal::CaptureStdout();
    EXPECT_EQ(list_command(o, fake), exit_code::ok);
    std::string table = testing::internal::GetCapturedStdout();
    EXPECT_NE(table.find("\nquiet  -    9      free    -         "), std::string::npos) << table;
    EXPECT_NE(table.find("ran, exit 5  -"), std::string::npos) << table;

    o.json = true;
    testing::internal::CaptureStdout();
    EXPECT_EQ(list_command(o, fake), exit_code::ok);
    std::string json = testing::internal::GetCapturedStdout();
    EXPECT_NE(json.find("\"name\":\"quiet\",\"key\":\"quiet\",\"held\":false,\"token\":null"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find("\"last_success\":null"), std::string::npos) << json;
}

TEST(InspectCommands, ReleaseSaysWhatEachNodeDidThenFailsOnAnUnansweredOne) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    ReleaseReport& r = fake.release_report.emplace();
    r.lock.keys = keys;
    r.result = ReleaseResult::released;
    r.agreement = Agreement{3, 2, 2};
    r.per_node = {{"n1:1", ReleaseResult::released, "t1aaaaaaaaaa", "", {}},
                  {"n2:2", ReleaseResult::absent, "", "", {}},
                  {"n3:3", std::nullopt, "", "timed out", {}}};
    InspectOptions o = options_for("job");
    o.force = true;
    testing::internal::CaptureStdout();
    EXPECT_THROW(release_command(o, fake), RedisUnavailable);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(out,
              "node n1:1: released (token t1aaaaaa...)\n"
              "node n2:2: not held\n"
              "node n3:3: unreachable (timed out)\n"
              "lock 'job': released on 1 of 3 nodes\n");
}

TEST(InspectCommands, ReleaseByTokenThatNoNodeHeldIsNotOwner) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    ReleaseReport& r = fake.release_report.emplace();
    r.lock.keys = keys;
    r.result = ReleaseResult::not_owner;
    r.agreement = Agreement{3, 2, 3};
    r.per_node = {{"n1:1", ReleaseResult::not_owner, "", "", {}},
                  {"n2:2", ReleaseResult::not_owner, "", "", {}},
                  {"n3:3", ReleaseResult::absent, "", "", {}}};
    InspectOptions o = options_for("job");
    o.token = "mine";
    testing::internal::CaptureStdout();
    EXPECT_THROW(release_command(o, fake), NotOwner);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("node n1:1: held by another token; left alone\n"), std::string::npos);
    EXPECT_NE(out.find("lock 'job': released on 0 of 3 nodes\n"), std::string::npos);
}

// ---- one node: the text and JSON that inspect.bats checked against real servers ----

constexpr long long redis_now = 1'700'000'000'000;

LockReport free_report(const std::string& name) {
    LockReport r;
    r.lock.keys = LockKeys::make(name, "");
    r.lock.type = "none";
    r.lock.redis_now_ms = redis_now;
    return r;
}

// Held by a redlock-run that recorded who it is (--hold-info: its command line too).
LockReport held_by_run_report() {
    LockReport r;
    r.lock = held_state(LockKeys::make("job", ""), "0123456789abcdef0123456789abcdef");
    r.lock.redis_now_ms = redis_now;
    HolderInfo h;
    h.token = r.lock.token;
    h.fence = 7;
    h.ttl_ms = 30'000;
    h.acquired_ms = redis_now - 1'500;
    h.host = "web1";
    h.pid = 4242;
    h.user = "ops";
    h.command = "bash -c work";
    r.lock.holder = h;
    r.held = true;
    return r;
}

// Held by another client (redis-py, a hand-made SET NX): no holder info.
LockReport held_by_other_client_report() {
    LockReport r;
    r.lock = held_state(LockKeys::make("other", ""), "tok-from-elsewhere");
    r.lock.redis_now_ms = redis_now;
    r.held = true;
    return r;
}

struct Shown {
    int code;
    std::string out;
};

Shown show_status(LockReport report, InspectOptions options) {
    FakeInspector fake;
    fake.status_report = std::move(report);
    testing::internal::CaptureStdout();
    int code = status_command(options, fake);
    return {code, testing::internal::GetCapturedStdout()};
}

InspectOptions json_options_for(const std::string& name) {
    InspectOptions o = options_for(name);
    o.json = true;
    return o;
}

TEST(InspectCommands, StatusOfAFreeLockSaysFreeAndExits1) {
    Shown s = show_status(free_report("nothing-here"), options_for("nothing-here"));
    EXPECT_EQ(s.code, exit_code::lock_free);
    EXPECT_EQ(s.out,
              "name:     nothing-here\n"
              "key:      nothing-here\n"
              "state:    free\n"
              "fence:    -\n");
}

TEST(InspectCommands, StatusJsonOfAFreeLockIsAnObjectWithHeldFalseAndExits1) {
    Shown s = show_status(free_report("nothing-here"), json_options_for("nothing-here"));
    EXPECT_EQ(s.code, exit_code::lock_free);
    EXPECT_EQ(s.out, R"({"name":"nothing-here","key":"nothing-here","held":false,"token":null,)"
                     R"("ttl_ms":null,"fence":null,"holder":null,"redis_time_ms":1700000000000,)"
                     R"("last_run":null,"last_success":null,"waiting":0,"waiters":[]})"
                     "\n");
}

TEST(InspectCommands, StatusShowsAShortTokenAndTheWholeOneWithVerbose) {
    Shown s = show_status(held_by_run_report(), options_for("job"));
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_NE(s.out.find("\ntoken:    01234567...\n"), std::string::npos) << s.out;
    InspectOptions verbose = options_for("job");
    verbose.conn.verbose = true;
    s = show_status(held_by_run_report(), verbose);
    EXPECT_NE(s.out.find("\ntoken:    0123456789abcdef0123456789abcdef\n"), std::string::npos)
        << s.out;
}

TEST(InspectCommands, StatusJsonOfAHeldLockHasEveryDocumentedField) {
    Shown s = show_status(held_by_run_report(), json_options_for("job"));
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_EQ(s.out,
              R"({"name":"job","key":"job","held":true,"token":"0123456789abcdef0123456789abcdef",)"
              R"("ttl_ms":20000,"fence":7,"holder":{"host":"web1","pid":4242,"user":"ops",)"
              R"("command":"bash -c work","acquired_ms":1699999998500,"held_ms":1500,)"
              R"("lease_ms":30000,"fence":7},"redis_time_ms":1700000000000,)"
              R"("last_run":null,"last_success":null,"waiting":0,"waiters":[]})"
              "\n");
}

// The keys of a JSON object's top level, in order (strings are skipped with their escapes).
std::vector<std::string> top_level_keys(const std::string& json) {
    std::vector<std::string> keys;
    int depth = 0;
    for (std::size_t i = 0; i < json.size(); ++i) {
        char c = json[i];
        if (c == '{' || c == '[') ++depth;
        if (c == '}' || c == ']') --depth;
        if (c != '"') continue;
        std::size_t end = i + 1;
        while (end < json.size() && json[end] != '"') end += json[end] == '\\' ? 2 : 1;
        if (depth == 1 && end + 1 < json.size() && json[end + 1] == ':')
            keys.push_back(json.substr(i + 1, end - i - 1));
        i = end;
    }
    return keys;
}

// One schema for every topology: a script's `jq .holder.host` or `.ttl_ms` must not depend on
// how many -u it was given. The quorum adds its votes and each node's answer beside them.
TEST(InspectCommands, StatusJsonOfAQuorumHasEveryTopLevelFieldOfOneNodes) {
    Shown single = show_status(held_by_run_report(), json_options_for("job"));
    LockReport quorum = held_by_run_report();
    quorum.agreement = Agreement{3, 2, 3};
    quorum.holding = 3;
    quorum.per_node = {
        {"n1:1", quorum.lock, ""}, {"n2:2", quorum.lock, ""}, {"n3:3", quorum.lock, ""}};
    Shown majority = show_status(quorum, json_options_for("job"));
    EXPECT_EQ(majority.code, exit_code::ok);
    std::vector<std::string> expected = top_level_keys(single.out);
    for (const char* k : {"nodes", "majority", "answered", "holding", "waiters_from", "per_node"})
        expected.push_back(k);
    EXPECT_EQ(top_level_keys(majority.out), expected) << majority.out;
    EXPECT_NE(majority.out.find(R"("ttl_ms":20000,"fence":7,"holder":{"host":"web1",)"),
              std::string::npos)
        << majority.out;
}

TEST(InspectCommands, StatusOfAnotherClientsLockShowsAnUnknownHolderAndExits0) {
    Shown s = show_status(held_by_other_client_report(), options_for("other"));
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_NE(s.out.find("\nstate:    held\n"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("\nholder:   unknown (no holder info recorded for the current token)\n"),
              std::string::npos)
        << s.out;
    s = show_status(held_by_other_client_report(), json_options_for("other"));
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_NE(s.out.find(R"("held":true,"token":"tok-from-elsewhere",)"), std::string::npos)
        << s.out;
    EXPECT_NE(s.out.find(R"("holder":null,)"), std::string::npos) << s.out;
}

TEST(InspectCommands, ListWithNothingHeldPrintsNothingOrAnEmptyArray) {
    FakeInspector fake;
    fake.list_report.emplace();
    testing::internal::CaptureStdout();
    EXPECT_EQ(list_command(options_for(""), fake), exit_code::ok);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
    testing::internal::CaptureStdout();
    EXPECT_EQ(list_command(json_options_for(""), fake), exit_code::ok);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "[]\n");
}

Shown show_release(ReleaseReport report, InspectOptions options) {
    FakeInspector fake;
    fake.release_report = std::move(report);
    testing::internal::CaptureStdout();
    int code = release_command(options, fake);
    return {code, testing::internal::GetCapturedStdout()};
}

TEST(InspectCommands, ReleaseOfAFreeLockSaysThereWasNothingToReleaseAndExits0) {
    ReleaseReport absent;
    absent.lock.keys = LockKeys::make("job", "");
    absent.result = ReleaseResult::absent;
    InspectOptions by_token = options_for("job");
    by_token.token = "whatever";
    Shown s = show_release(absent, by_token);
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_EQ(s.out, "lock 'job' is not held; nothing to release\n");
    InspectOptions forced = options_for("job");
    forced.force = true;
    s = show_release(absent, forced);
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_EQ(s.out, "lock 'job' is not held; nothing to release\n");
}

TEST(InspectCommands, ReleaseForceOfAnotherClientsLockNamesAnUnknownHolder) {
    ReleaseReport released;
    released.result = ReleaseResult::released;
    released.lock = held_state(LockKeys::make("job", ""), "0123456789abcdef0123456789abcdef");
    InspectOptions forced = options_for("job");
    forced.force = true;
    forced.conn.verbose = true;
    Shown s = show_release(released, forced);
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_EQ(s.out,
              "released lock 'job' held by an unknown holder (token "
              "0123456789abcdef0123456789abcdef), which had 20s left\n");
}

}  // namespace
}  // namespace redlock

namespace redlock {
namespace {

// What a hostile server can put in a ledger entry's strings: set the terminal's title, clear the
// screen, and forge a line of the report.
LedgerEntry hostile_entry() {
    LedgerEntry e;
    e.end_ms = 1'700'000'000'000;
    e.start_ms = e.end_ms - 5;
    e.duration_ms = 5;
    e.outcome = "ran\x1b]0;pwned\x07\x1b[2J\nstate:    held\xc2\x9b";
    e.host = "web\x1b[31m";
    e.user = "u\r";
    e.pid = 42;
    e.exit_status = 0;
    return e;
}

// The reports here hold only ASCII, so their safe rendering does too: printable characters and
// the newlines that end the lines, no control (C0, DEL, C1 raw or as UTF-8), and no line a
// server wrote.
void expect_terminal_safe(const std::string& out, std::size_t own_state_lines) {
    for (std::size_t i = 0; i < out.size(); ++i) {
        auto c = static_cast<unsigned char>(out[i]);
        EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f))
            << "byte " << int(c) << " at " << i << " of:\n"
            << out;
    }
    // The report's own state lines, no more.
    std::size_t state_lines = 0;
    for (std::size_t at = out.find("\nstate:"); at != std::string::npos;
         at = out.find("\nstate:", at + 1))
        ++state_lines;
    EXPECT_EQ(state_lines, own_state_lines) << out;
}

TEST(InspectCommands, StatusEscapesWhatTheServerWroteInTheLedger) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.status_report.emplace();
    fake.status_report->lock.keys = keys;
    fake.status_report->lock.type = "none";
    fake.status_report->runs.last = hostile_entry();
    fake.status_report->runs.last_success = hostile_entry();
    testing::internal::CaptureStdout();
    EXPECT_EQ(status_command(options_for("job"), fake), exit_code::lock_free);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("state:    free\n"), std::string::npos) << out;
    EXPECT_NE(out.find("ran\\x1b]0;pwned\\x07\\x1b[2J\\nstate:    held\\xc2\\x9b"),
              std::string::npos)
        << out;
    expect_terminal_safe(out, 1);
}

TEST(InspectCommands, StatusEscapesANodesErrorWhereSeveralDecide) {
    LockKeys keys = LockKeys::make("job", "");
    FakeInspector fake;
    fake.status_report = majority_report(keys);
    fake.status_report->per_node[2].error = "ERR \x1b[2J\nstate:    held";
    fake.status_report->runs.last = hostile_entry();
    testing::internal::CaptureStdout();
    status_command(options_for("job"), fake);
    std::string out = testing::internal::GetCapturedStdout();
    EXPECT_NE(out.find("unreachable (ERR \\x1b[2J\\nstate:    held)\n"), std::string::npos) << out;
    expect_terminal_safe(out, 1);
}

TEST(InspectCommands, HistoryEscapesWhatTheServerWroteInTheLedger) {
    FakeInspector fake;
    fake.history_entries = {hostile_entry()};
    testing::internal::CaptureStdout();
    EXPECT_EQ(history_command(options_for("job"), fake), exit_code::ok);
    std::string out = testing::internal::GetCapturedStdout();
    expect_terminal_safe(out, 0);
}

}  // namespace
}  // namespace redlock

namespace redlock {
namespace {

// ---- exact text and JSON of status, list, release and history; local times shown in UTC ----

// Times are shown in local time: pin the zone to UTC for the test, and put the caller's back.
class UtcZone {
  public:
    UtcZone() {
        if (const char* tz = std::getenv("TZ")) saved_ = tz;
        ::setenv("TZ", "UTC", 1);
        ::tzset();
    }
    ~UtcZone() {
        if (saved_)
            ::setenv("TZ", saved_->c_str(), 1);
        else
            ::unsetenv("TZ");
        ::tzset();
    }
    UtcZone(const UtcZone&) = delete;
    UtcZone& operator=(const UtcZone&) = delete;

  private:
    std::optional<std::string> saved_;
};

constexpr long long t0 = 1'700'000'000'000;  // 2023-11-14 22:13:20 UTC

LedgerEntry entry(long long end_ms, long long duration_ms, const std::string& outcome,
                  long long fence) {
    LedgerEntry e;
    e.end_ms = end_ms;
    e.start_ms = end_ms - duration_ms;
    e.duration_ms = duration_ms;
    e.outcome = outcome;
    e.host = "web-1";
    e.pid = 4120;
    e.user = "deploy";
    e.fence = fence;
    return e;
}

// Newest first: killed by signal 9; exited 3 after a minute and a half; busy (never held it, no
// status); exited 0 with its command line recorded (--hold-info).
std::vector<LedgerEntry> four_runs() {
    LedgerEntry killed = entry(t0, 1'500, "ran", 9);
    killed.signal = 9;
    LedgerEntry failed = entry(t0 - 60'000, 90'250, "ran", 8);
    failed.exit_status = 3;
    LedgerEntry busy = entry(t0 - 120'000, 4, "busy", 0);
    LedgerEntry ok = entry(t0 - 3'600'000, 3'725'000, "ran", 7);
    ok.exit_status = 0;
    ok.command = "backup --full";
    return {killed, failed, busy, ok};
}

std::string show_history(std::vector<LedgerEntry> entries, InspectOptions options,
                         FakeInspector* seen = nullptr) {
    FakeInspector local;
    FakeInspector& fake = seen ? *seen : local;
    fake.history_entries = std::move(entries);
    testing::internal::CaptureStdout();
    EXPECT_EQ(history_command(options, fake), exit_code::ok);
    return testing::internal::GetCapturedStdout();
}

TEST(InspectCommands, HistoryIsATableNewestFirstWithStatusAndDurationColumns) {
    UtcZone utc;
    EXPECT_EQ(show_history(four_runs(), options_for("job")),
              "END                       OUTCOME         STATUS     DURATION  FENCE HOST        "
              "             PID USER      \n"
              "2023-11-14 22:13:20 +0000 ran             signal 9     1.500s      9 web-1       "
              "            4120 deploy    \n"
              "2023-11-14 22:12:20 +0000 ran             exit 3        1m30s      8 web-1       "
              "            4120 deploy    \n"
              "2023-11-14 22:11:20 +0000 busy            -               4ms      0 web-1       "
              "            4120 deploy    \n"
              "2023-11-14 21:13:20 +0000 ran             exit 0       1h2m5s      7 web-1       "
              "            4120 deploy    \n");
}

// Real fences are Redis's clock in microseconds (16 digits) and may reach 2^62 - 1 (19); pids
// reach 10 digits, hosts 255 bytes. Every row's cells start (or, for the numbers, end) where the
// header's do, whatever their width.
TEST(InspectCommands, HistoryStaysAlignedWithWideFencesPidsStatusesAndHosts) {
    UtcZone utc;
    std::vector<LedgerEntry> runs = four_runs();
    runs[0].fence = 1'796'223'727'164'183;
    runs[1].fence = 4'611'686'018'427'387'903;
    runs[1].signal = 127;
    runs[2].pid = 2'147'483'647;
    runs[3].host = "build-runner-17.ci.internal.example.com";
    std::string out = show_history(runs, options_for("job"));
    std::vector<std::string> lines;
    for (std::size_t at = 0, nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1)
        lines.push_back(out.substr(at, nl - at));
    ASSERT_EQ(lines.size(), 5u) << out;
    const std::string& header = lines[0];
    auto end_of = [](const std::string& line, const std::string& cell) {
        return line.find(cell) + cell.size();
    };
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const LedgerEntry& e = runs[i - 1];
        const std::string& line = lines[i];
        EXPECT_EQ(line.find(" " + e.outcome + " ") + 1, header.find("OUTCOME")) << out;
        EXPECT_EQ(end_of(line, " " + std::to_string(e.fence) + " ") - 1, end_of(header, "FENCE"))
            << out;
        EXPECT_EQ(line.find(" " + e.host + " ") + 1, header.find("HOST")) << out;
        EXPECT_EQ(end_of(line, " " + std::to_string(e.pid) + " ") - 1, end_of(header, "PID"))
            << out;
        EXPECT_EQ(line.find(" " + e.user) + 1, header.find("USER")) << out;
    }
}

TEST(InspectCommands, HistoryJsonIsOneObjectALineWithTheCommandOnlyWhenRecorded) {
    EXPECT_EQ(show_history(four_runs(), json_options_for("job")),
              R"({"start_ms":1699999998500,"end_ms":1700000000000,"duration_ms":1500,)"
              R"("outcome":"ran","host":"web-1","pid":4120,"user":"deploy","exit_status":null,)"
              R"("signal":9,"fence":9})"
              "\n"
              R"({"start_ms":1699999849750,"end_ms":1699999940000,"duration_ms":90250,)"
              R"("outcome":"ran","host":"web-1","pid":4120,"user":"deploy","exit_status":3,)"
              R"("signal":null,"fence":8})"
              "\n"
              R"({"start_ms":1699999879996,"end_ms":1699999880000,"duration_ms":4,)"
              R"("outcome":"busy","host":"web-1","pid":4120,"user":"deploy","exit_status":null,)"
              R"("signal":null,"fence":0})"
              "\n"
              R"({"start_ms":1699992675000,"end_ms":1699996400000,"duration_ms":3725000,)"
              R"("outcome":"ran","host":"web-1","pid":4120,"user":"deploy","exit_status":0,)"
              R"("signal":null,"fence":7,"command":"backup --full"})"
              "\n");
}

TEST(InspectCommands, HistoryOfALockWithoutRunsSaysSoOrPrintsNothingAsJson) {
    EXPECT_EQ(show_history({}, options_for("job")), "no runs recorded for lock 'job'\n");
    EXPECT_EQ(show_history({}, json_options_for("job")), "");
}

TEST(InspectCommands, HistoryLimitIsWhatTheLedgerIsAskedForAndBoundsWhatIsShown) {
    InspectOptions o = json_options_for("job");
    FakeInspector fake;
    EXPECT_EQ(show_history(four_runs(), o, &fake).size(),
              show_history(four_runs(), o).size());  // the default, 20, shows all four
    EXPECT_EQ(fake.history_limit, 20u);
    o.limit = 1;
    std::string one = show_history(four_runs(), o, &fake);
    EXPECT_EQ(fake.history_limit, 1u);
    EXPECT_EQ(one.rfind(R"({"start_ms":1699999998500,)", 0), 0u) << one;
    EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), 1) << one;
}

TEST(InspectCommands, StatusShowsTheLastRunAndTheLastSuccess) {
    UtcZone utc;
    LockReport r = free_report("job");
    r.runs.last = four_runs()[1];
    r.runs.last_success = four_runs()[3];
    Shown s = show_status(r, options_for("job"));
    EXPECT_EQ(s.code, exit_code::lock_free);
    EXPECT_EQ(s.out,
              "name:     job\n"
              "key:      job\n"
              "state:    free\n"
              "fence:    -\n"
              "last run: 2023-11-14 22:12:20 +0000, ran, exit 3, 1m30s on web-1 (pid 4120, "
              "deploy)\n"
              "last ok:  2023-11-14 21:13:20 +0000, ran, exit 0, 1h2m5s on web-1 (pid 4120, "
              "deploy)\n");
    s = show_status(r, json_options_for("job"));
    EXPECT_NE(s.out.find(R"("last_run":{"start_ms":1699999849750,"end_ms":1699999940000,)"
                         R"("duration_ms":90250,"outcome":"ran","host":"web-1","pid":4120,)"
                         R"("user":"deploy","exit_status":3,"signal":null,"fence":8},)"
                         R"("last_success":{"start_ms":1699992675000,)"),
              std::string::npos)
        << s.out;
    // A last success the ledger no longer keeps, a last run that cannot be shown.
    r.runs.last_success.reset();
    s = show_status(r, options_for("job"));
    EXPECT_NE(s.out.find("\nlast ok:  none among the runs the ledger keeps\n"), std::string::npos)
        << s.out;
    r.runs = {};
    r.runs.last_success = four_runs()[3];
    s = show_status(r, options_for("job"));
    EXPECT_NE(s.out.find("\nlast run: none that can be shown\n"), std::string::npos) << s.out;
}

TEST(InspectCommands, StatusOfAHeldLockShowsHolderCommandAcquiredTtlFenceAndAShortToken) {
    UtcZone utc;
    Shown s = show_status(held_by_run_report(), options_for("job"));
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_EQ(s.out,
              "name:     job\n"
              "key:      job\n"
              "state:    held\n"
              "holder:   ops@web1 pid 4242\n"
              "command:  bash -c work\n"
              "acquired: 2023-11-14 22:13:18 +0000 (1s ago)\n"
              "ttl left: 20s\n"
              "fence:    7\n"
              "token:    01234567...\n");
    LockReport no_command = held_by_run_report();
    no_command.lock.holder->command.clear();
    s = show_status(no_command, options_for("job"));
    EXPECT_NE(s.out.find("\ncommand:  (not recorded: the holder ran without --hold-info)\n"),
              std::string::npos)
        << s.out;
}

ListedLock listed(const LockReport& r) {
    ListedLock l;
    l.lock = r.lock;
    return l;
}

std::string show_list(ListReport report, InspectOptions options, FakeInspector* seen = nullptr) {
    FakeInspector local;
    FakeInspector& fake = seen ? *seen : local;
    fake.list_report = std::move(report);
    testing::internal::CaptureStdout();
    EXPECT_EQ(list_command(options, fake), exit_code::ok);
    return testing::internal::GetCapturedStdout();
}

// A foreign lock with a long name, a run's lock with its holder, and one without an expiry:
// the inspector hands them over sorted by name, and list keeps that order.
ListReport three_locks() {
    ListReport r;
    LockReport foreign = held_by_other_client_report();
    foreign.lock.keys = LockKeys::make("a-other-client", "");
    foreign.lock.pttl_ms = 59'250;
    foreign.lock.fence.reset();
    r.locks.push_back(listed(foreign));
    r.locks.push_back(listed(held_by_run_report()));
    LockReport forever = held_by_other_client_report();
    forever.lock.keys = LockKeys::make("x", "");
    forever.lock.pttl_ms = -1;
    r.locks.push_back(listed(forever));
    return r;
}

TEST(InspectCommands, ListIsATableInAlignedColumnsInTheInspectorsOrder) {
    EXPECT_EQ(show_list(three_locks(), options_for("")),
              "NAME            TTL        FENCE  HOLDER             HELD FOR  COMMAND\n"
              "a-other-client  59.250s    -      unknown            -         -\n"
              "job             20s        7      ops@web1 pid 4242  1s        bash -c work\n"
              "x               no expiry  7      unknown            -         -\n");
}

// README.md's sample session, as status and list print it from the same two locks: one held by
// a run (--hold-info) for 1m12s, one taken by another client. The sample is read from the README.
LockReport readme_held_report() {
    constexpr long long acquired = 1'796'181'300'000;  // 2026-12-02 03:15:00 UTC
    LockReport r;
    r.lock =
        held_state(LockKeys::make("nightly-report", "cron:"), "3f2a9c1e000000000000000000000000");
    r.lock.redis_now_ms = acquired + 72'000;
    r.lock.pttl_ms = 27'412;
    r.lock.fence = 1'796'223'727'164'183;
    HolderInfo h;
    h.token = r.lock.token;
    h.fence = *r.lock.fence;
    h.ttl_ms = 30'000;
    h.acquired_ms = acquired;
    h.host = "web-2";
    h.pid = 4120;
    h.user = "deploy";
    h.command = "/usr/local/bin/nightly-report";
    r.lock.holder = h;
    r.held = true;
    return r;
}

// The output under "$ COMMAND" in the README's console block, up to the next "$ " line.
std::string readme_sample(const std::string& command) {
    std::ifstream in(std::string(REDLOCK_SOURCE_DIR) + "/README.md");
    std::ostringstream text;
    text << in.rdbuf();
    std::string readme = text.str();
    std::size_t at = readme.find("\n$ " + command + "\n");
    if (at == std::string::npos) return "(no '$ " + command + "' in README.md)";
    at = readme.find('\n', at + 1) + 1;
    std::size_t end = std::min(readme.find("\n$ ", at - 1), readme.find("\n```", at - 1));
    return readme.substr(at, end + 1 - at);
}

TEST(InspectCommands, TheReadmesStatusAndListSamplesAreWhatTheCommandsPrint) {
    UtcZone utc;
    EXPECT_EQ(show_status(readme_held_report(), options_for("nightly-report")).out,
              readme_sample("redlock-run --prefix cron: status nightly-report"));
    ListReport r;
    r.locks.push_back(listed(readme_held_report()));
    LockReport foreign = held_by_other_client_report();
    foreign.lock.keys = LockKeys::make("sync-feeds", "cron:");
    foreign.lock.pttl_ms = 118'100;
    foreign.lock.fence = 1'796'223'700'000'412;
    r.locks.push_back(listed(foreign));
    EXPECT_EQ(show_list(r, options_for("")), readme_sample("redlock-run --prefix cron: list"));
}

TEST(InspectCommands, ListJsonIsAnArrayOfStatusObjectsWithoutLastRuns) {
    FakeInspector fake;
    std::string out = show_list(three_locks(), json_options_for(""), &fake);
    EXPECT_FALSE(fake.list_last_runs);
    EXPECT_EQ(out,
              R"([{"name":"a-other-client","key":"a-other-client","held":true,)"
              R"("token":"tok-from-elsewhere","ttl_ms":59250,"fence":null,"holder":null,)"
              R"("redis_time_ms":1700000000000},)"
              R"({"name":"job","key":"job","held":true,"token":"0123456789abcdef0123456789abcdef",)"
              R"("ttl_ms":20000,"fence":7,"holder":{"host":"web1","pid":4242,"user":"ops",)"
              R"("command":"bash -c work","acquired_ms":1699999998500,"held_ms":1500,)"
              R"("lease_ms":30000,"fence":7},"redis_time_ms":1700000000000},)"
              R"({"name":"x","key":"x","held":true,"token":"tok-from-elsewhere","ttl_ms":null,)"
              R"("fence":7,"holder":null,"redis_time_ms":1700000000000}])"
              "\n");
}

TEST(InspectCommands, ListLastRunsAddsTwoColumnsBeforeTheCommandAndTwoJsonFields) {
    UtcZone utc;
    ListReport r;
    r.locks.push_back(listed(held_by_run_report()));
    r.locks.back().runs = LastRuns{four_runs()[1], four_runs()[3]};
    r.locks.push_back(listed(held_by_other_client_report()));
    r.locks.back().runs = LastRuns{};
    InspectOptions o = options_for("");
    o.last_runs = true;
    FakeInspector fake;
    EXPECT_EQ(show_list(r, o, &fake),
              "NAME   TTL  FENCE  HOLDER             HELD FOR  LAST RUN                          "
              "     LAST OK                                COMMAND\n"
              "job    20s  7      ops@web1 pid 4242  1s        2023-11-14 22:12:20 +0000 ran, "
              "exit 3  2023-11-14 21:13:20 +0000 ran, exit 0  bash -c work\n"
              "other  20s  7      unknown            -         -                                 "
              "     -                                      -\n");
    EXPECT_TRUE(fake.list_last_runs);
    o.json = true;
    std::string json = show_list(r, o);
    EXPECT_NE(json.find(R"("redis_time_ms":1700000000000,"last_run":{"start_ms":1699999849750,)"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find(R"("exit_status":3,"signal":null,"fence":8},"last_success":{)"),
              std::string::npos)
        << json;
    EXPECT_NE(json.find(R"("redis_time_ms":1700000000000,"last_run":null,"last_success":null}])"),
              std::string::npos)
        << json;
}

TEST(InspectCommands, ListEscapesNamesAndAlignsThemByDisplayWidth) {
    ListReport r;
    for (const char* name : {"a b", "bad\xff", "caf\xc3\xa9", "new\nline"}) {
        LockReport l = held_by_other_client_report();
        l.lock.keys = LockKeys::make(name, "");
        r.locks.push_back(listed(l));
    }
    EXPECT_EQ(show_list(r, options_for("")),
              "NAME       TTL  FENCE  HOLDER   HELD FOR  COMMAND\n"
              "a b        20s  7      unknown  -         -\n"
              "bad\\xff    20s  7      unknown  -         -\n"
              "caf\xc3\xa9       20s  7      unknown  -         -\n"
              "new\\nline  20s  7      unknown  -         -\n");
    std::string json = show_list(r, json_options_for(""));
    EXPECT_NE(json.find(R"({"name":"bad\u00ff","key":"bad\u00ff",)"), std::string::npos) << json;
    EXPECT_NE(json.find("{\"name\":\"caf\xc3\xa9\",\"key\":\"caf\xc3\xa9\","), std::string::npos)
        << json;
    EXPECT_NE(json.find(R"({"name":"new\nline","key":"new\nline",)"), std::string::npos) << json;
}

TEST(InspectCommands, ReleaseForceOfARunsLockNamesItsHolderCommandAndShortToken) {
    ReleaseReport released;
    released.result = ReleaseResult::released;
    released.lock = held_by_run_report().lock;
    InspectOptions forced = options_for("job");
    forced.force = true;
    Shown s = show_release(released, forced);
    EXPECT_EQ(s.code, exit_code::ok);
    EXPECT_EQ(s.out,
              "released lock 'job' held by ops@web1 pid 4242 (command 'bash -c work', token "
              "01234567...), which had 20s left\n");
    released.lock.holder->command.clear();
    released.lock.pttl_ms = -1;
    s = show_release(released, forced);
    EXPECT_EQ(s.out,
              "released lock 'job' held by ops@web1 pid 4242 (token 01234567...), which had no "
              "expiry\n");
}

TEST(InspectCommands, ReleaseTokenSaysReleasedOrRefusesNamingTheHolder) {
    ReleaseReport report;
    report.result = ReleaseResult::released;
    report.lock.keys = LockKeys::make("job", "");
    InspectOptions by_token = options_for("job");
    by_token.token = "not-the-token";  // 13 characters: shown shortened
    EXPECT_EQ(show_release(report, by_token).out, "released lock 'job'\n");
    report.result = ReleaseResult::not_owner;
    report.lock = held_by_run_report().lock;
    FakeInspector fake;
    fake.release_report = report;
    try {
        release_command(by_token, fake);
        ADD_FAILURE() << "no NotOwner";
    } catch (const NotOwner& e) {
        EXPECT_STREQ(e.what(),
                     "lock 'job' is held by ops@web1 pid 4242 (command 'bash -c work', token "
                     "01234567...), not by token not-the-...; not released");
    }
}

}  // namespace
}  // namespace redlock

namespace redlock {
namespace {

// Two shared holders, the first recorded without --hold-info (no command line), the second with.
LockReport shared_report() {
    LockReport r = free_report("ops");
    r.lock.type = "string";
    r.held = true;
    PermitsState s;
    s.shared = true;
    s.redis_now_ms = redis_now;
    for (const char* command : {"", "backup --all"}) {
        PermitHolder h;
        h.token = std::string(32, command[0] ? 'b' : 'a');
        h.pttl_ms = 20'000;
        HolderInfo info;
        info.token = h.token;
        info.host = "web1";
        info.pid = 4242;
        info.user = "ops";
        info.fence = 9;
        info.command = command;
        h.holder = info;
        s.holders.push_back(h);
    }
    r.holders = s;
    return r;
}

// A holder that recorded no command line (no --hold-info) shows no empty 'command:' line, and
// the one-line form (release's) no "command ''".
TEST(InspectCommands, SharedAndPermitHoldersWithoutACommandShowNoEmptyCommand) {
    Shown s = show_status(shared_report(), options_for("ops"));
    // No line that is "command:" and padding alone.
    std::string squeezed = s.out;
    squeezed.erase(std::remove(squeezed.begin(), squeezed.end(), ' '), squeezed.end());
    EXPECT_EQ(squeezed.find("command:\n"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("  command:  backup --all\n"), std::string::npos) << s.out;
    LockReport r = shared_report();
    EXPECT_EQ(permit_holder_line(r.lock, r.holders->holders[0], false).find("command"),
              std::string::npos)
        << permit_holder_line(r.lock, r.holders->holders[0], false);
    EXPECT_NE(permit_holder_line(r.lock, r.holders->holders[1], false)
                  .find("(command 'backup --all', token "),
              std::string::npos)
        << permit_holder_line(r.lock, r.holders->holders[1], false);
}

}  // namespace
}  // namespace redlock
