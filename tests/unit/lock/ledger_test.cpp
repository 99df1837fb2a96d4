// The pure parts of the ledger: slot arithmetic with its range checks, the entry encoding, and
// the keys landing in the lock's slot.
#include "lock/ledger/ledger.hpp"

#include <gtest/gtest.h>

#include <climits>

#include "lock/node/keys.hpp"
#include "redis/cluster_slots.hpp"
#include "util/errors.hpp"

using namespace redlock;

namespace {
OncePer every(long long period_ms, long long offset_ms = 0) {
    OncePer p;
    p.period = Millis(period_ms);
    p.offset = Millis(offset_ms);
    return p;
}
}  // namespace

TEST(OncePerSlot, FloorsRedisTimeMinusTheOffsetByThePeriod) {
    const long long hour = 3'600'000;
    EXPECT_EQ(slot_of(0, every(hour)), 0);
    EXPECT_EQ(slot_of(hour - 1, every(hour)), 0);
    EXPECT_EQ(slot_of(hour, every(hour)), 1);
    // A daily job at 02:30 UTC: slots start at 02:30.
    const long long day = 24 * hour, offset = 2 * hour + 30 * 60'000;
    long long at_0229 = 19'000 * day + offset - 60'000;
    long long at_0230 = 19'000 * day + offset;
    EXPECT_EQ(slot_of(at_0230, every(day, offset)), slot_of(at_0229, every(day, offset)) + 1);
    EXPECT_EQ(slot_start_ms(slot_of(at_0230, every(day, offset)), every(day, offset)), at_0230);
    // Before the first slot of the offset: negative, floored rather than truncated.
    EXPECT_EQ(slot_of(0, every(hour, 1000)), -1);
}

TEST(OncePerSlot, RejectsClocksAndPoliciesOutOfRange) {
    EXPECT_THROW(slot_of(-1, every(3'600'000)), DataError);
    EXPECT_THROW(slot_of(300'000'000'000'000LL, every(3'600'000)), DataError);
    EXPECT_THROW(slot_of(1000, every(0)), UsageError);
    EXPECT_THROW(slot_of(1000, every(999)), UsageError);
    EXPECT_THROW(slot_of(1000, every(once_period_max.count() + 1)), UsageError);
    EXPECT_THROW(slot_of(1000, every(10'000, 10'000)), UsageError);
    EXPECT_THROW(slot_of(1000, every(10'000, -1)), UsageError);
    EXPECT_EQ(once_record_ttl(every(10'000)), Millis(30'000));
}

// A hostile server's slot (an acquire reply) must not overflow slot * period: only the slots of
// a real clock (0 to the year 10000) are taken, and slot_start_ms refuses any other.
TEST(OncePerSlot, OnlySlotsOfARealClockAreTaken) {
    const long long day = 86'400'000;
    EXPECT_TRUE(slot_in_range(slot_of(0, every(day)), every(day)));
    EXPECT_TRUE(slot_in_range(slot_of(max_time_ms, every(day)), every(day)));
    EXPECT_TRUE(slot_in_range(-1, every(day, 1000)));
    EXPECT_FALSE(slot_in_range(-1, every(day)));
    EXPECT_FALSE(slot_in_range(slot_of(max_time_ms, every(day)) + 1, every(day)));
    EXPECT_FALSE(slot_in_range(max_slot, every(day)));
    EXPECT_THROW(slot_start_ms(max_slot, every(day)), DataError);
    EXPECT_THROW(slot_start_ms(LLONG_MIN, every(day)), DataError);
    EXPECT_EQ(slot_start_ms(slot_of(max_time_ms, every(day)), every(day)), max_time_ms / day * day);
}

TEST(LedgerEntry, RoundTripsThroughTheStoredForm) {
    LedgerEntry e;
    e.duration_ms = 1234;
    e.host = "web\t1\\x";
    e.pid = 42;
    e.user = "deploy\nuser";
    e.exit_status = 3;
    e.fence = 1'700'000'000'000'123LL;
    e.command = "sh -c 'a=b\tc'";
    // What the script prepends.
    std::string stored =
        "end_ms=1700000002000\tstart_ms=1700000000766\toutcome=ran\t" + encode_entry(e);
    LedgerEntry d = decode_entry(stored);
    EXPECT_EQ(d.end_ms, 1'700'000'002'000);
    EXPECT_EQ(d.start_ms, 1'700'000'000'766);
    EXPECT_EQ(d.outcome, "ran");
    EXPECT_EQ(d.duration_ms, 1234);
    EXPECT_EQ(d.host, e.host);
    EXPECT_EQ(d.user, e.user);
    EXPECT_EQ(d.pid, 42);
    EXPECT_EQ(d.exit_status, 3);
    EXPECT_FALSE(d.signal);
    EXPECT_EQ(d.fence, e.fence);
    EXPECT_EQ(d.command, e.command);
}

namespace {
// An entry as the script stores it, each field replaceable.
std::string stored_entry(const std::string& name = "", const std::string& value = "") {
    std::vector<std::pair<std::string, std::string>> fields{{"end_ms", "1700000002000"},
                                                            {"start_ms", "1700000000766"},
                                                            {"outcome", "ran"},
                                                            {"duration_ms", "1234"},
                                                            {"host", "web1"},
                                                            {"pid", "42"},
                                                            {"user", "deploy"},
                                                            {"exit", "0"},
                                                            {"fence", "7"}};
    std::string out;
    bool replaced = false;
    for (auto& [n, v] : fields) {
        if (n == name) {
            v = value;
            replaced = true;
        }
        if (!out.empty()) out += '\t';
        out += n + "=" + v;
    }
    if (!replaced && !name.empty()) out += "\t" + name + "=" + value;
    return out;
}
}  // namespace

TEST(LedgerEntry, UnknownFieldsAndMalformedPairsAreIgnored) {
    LedgerEntry d = decode_entry(stored_entry() + "\tnoequals\t=\tunknown=1\tlater=\\");
    EXPECT_EQ(d.pid, 42);
    EXPECT_EQ(d.exit_status, 0);
    EXPECT_EQ(d.fence, 7);
}

// Every number of an entry comes from a server: one out of its domain (a pid no process has,
// a negative fence, a time before 2000 or after 9999, a negative or endless duration, an exit
// status or signal no process reports, or not a number at all) rejects the whole entry, which
// history and status then leave out with a warning, rather than show or compute with it.
TEST(LedgerEntry, RejectsEveryNumberOutOfItsRange) {
    EXPECT_NO_THROW(decode_entry(stored_entry()));
    const std::vector<std::pair<std::string, std::string>> bad{
        {"duration_ms", "-9223372036854775808"},
        {"duration_ms", "-1"},
        {"duration_ms", "9223372036854775807"},
        {"duration_ms", "x"},
        {"pid", "-1"},
        {"pid", "0"},
        {"pid", "2147483648"},
        {"pid", ""},
        {"fence", "-2"},
        {"fence", "-9223372036854775808"},
        {"fence", "4611686018427387904"},  // 2^62: beyond any fence counter (fence_limit)
        {"end_ms", "-9223372036854775808"},
        {"end_ms", "946684799999"},     // 1999-12-31T23:59:59.999Z
        {"end_ms", "253402300800000"},  // 10000-01-01
        {"start_ms", "-9223372036854775808"},
        {"start_ms", "1700000002001"},  // after its end
        {"exit", "99999"},
        {"exit", "-3"},
        {"signal", "-3"},
        {"signal", "0"},
        {"signal", "128"},
    };
    for (const auto& [name, value] : bad) {
        std::string stored = stored_entry(name, value);
        try {
            (void)decode_entry(stored);
            ADD_FAILURE() << name << "=" << value << " was accepted";
        } catch (const DataError& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    }
}

TEST(LedgerEntry, RejectsAnEntryWithoutItsTimesPidOrFence) {
    for (const char* name : {"end_ms", "start_ms", "duration_ms", "pid", "fence", "outcome"}) {
        std::string stored;
        for (std::string_view pair : {"end_ms=1700000002000", "start_ms=1700000000766",
                                      "outcome=ran", "duration_ms=1", "pid=1", "fence=0"})
            if (!pair.starts_with(std::string(name) + "=")) {
                if (!stored.empty()) stored += '\t';
                stored += pair;
            }
        EXPECT_THROW((void)decode_entry(stored), DataError) << name;
    }
    EXPECT_THROW((void)decode_entry(""), DataError);
}

TEST(LedgerEntry, KeepsNumbersAtTheEdgesOfTheirRanges) {
    LedgerEntry d = decode_entry(
        "end_ms=253402300799999\tstart_ms=946684800000\toutcome=lost\tduration_ms=0\tpid="
        "2147483647\tfence=4611686018427387903\texit=255\tsignal=127");
    EXPECT_EQ(d.end_ms, 253'402'300'799'999);
    EXPECT_EQ(d.start_ms, 946'684'800'000);
    EXPECT_EQ(d.pid, 2'147'483'647);
    EXPECT_EQ(d.fence, 4'611'686'018'427'387'903);
    EXPECT_EQ(d.exit_status, 255);
    EXPECT_EQ(d.signal, 127);
}

TEST(LedgerEntry, OutcomesHaveTheirDocumentedNames) {
    EXPECT_EQ(outcome_name(Outcome::skipped_slot), "skipped-slot");
    EXPECT_EQ(outcome_name(Outcome::timed_out), "timed-out");
    EXPECT_EQ(outcome_name(Outcome::failed_to_start), "failed-to-start");
}

TEST(LedgerKeys, LiveInTheLockKeysSlot) {
    for (const char* name : {"job", "a{b}c", "}{x", "{}"}) {
        LockKeys k = LockKeys::make(name, "pre:");
        EXPECT_EQ(hash_slot(k.ledger), hash_slot(k.key)) << name;
        EXPECT_EQ(hash_slot(k.once), hash_slot(k.key)) << name;
        EXPECT_NE(k.ledger, k.once);
    }
}

namespace {
LedgerEntry run_entry(const std::string& host, long long end_ms, const std::string& outcome = "ran",
                      int exit_status = 0) {
    LedgerEntry e;
    e.host = host;
    e.pid = 100;
    e.user = "deploy";
    e.fence = 7;
    e.duration_ms = 1000;
    e.end_ms = end_ms;
    e.start_ms = end_ms - 1000;
    e.outcome = outcome;
    e.exit_status = exit_status;
    return e;
}
}  // namespace

// Five nodes, majority three: two that agree on a run nobody else has (newer than any real one)
// neither add it to the history nor make it the last run.
TEST(QuorumLedger, AMinorityCannotAddARunOrForgeTheLastOne) {
    const long long t = 1'700'000'000'000;
    LedgerEntry real = run_entry("web1", t), older = run_entry("web1", t - 60'000, "ran", 1);
    LedgerEntry forged = run_entry("forged", t + 60'000);
    std::vector<std::vector<LedgerEntry>> ledgers{
        {forged, real, older}, {forged, real, older}, {real, older}, {real, older}, {older}};
    std::vector<LedgerEntry> h = majority_history(ledgers, 3, 10);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[0].host, "web1");
    EXPECT_EQ(h[0].exit_status, 0);
    EXPECT_EQ(h[1].exit_status, 1);
    EXPECT_EQ(majority_history(ledgers, 3, 1).size(), 1u);

    std::vector<LastRuns> lasts{
        {forged, forged}, {forged, forged}, {real, real}, {real, real}, {older, std::nullopt}};
    LastRuns r = majority_last_runs(lasts, 3);
    EXPECT_FALSE(r.last);  // two say forged, two real, one older: no majority
    EXPECT_FALSE(r.last_success);
    lasts[4] = {real, real};
    r = majority_last_runs(lasts, 3);
    ASSERT_TRUE(r.last);
    EXPECT_TRUE(same_run(*r.last, real));
    ASSERT_TRUE(r.last_success);
    EXPECT_TRUE(same_run(*r.last_success, real));
}

// A node counts once per run, however often it lists the run.
TEST(QuorumLedger, ANodeThatRepeatsAnEntryCountsOnce) {
    LedgerEntry forged = run_entry("forged", 1'700'000'000'000);
    std::vector<std::vector<LedgerEntry>> ledgers{{forged, forged, forged}, {}, {}};
    EXPECT_TRUE(majority_history(ledgers, 2, 10).empty());
}

// The copies of one run differ in what each node judged: its time by its clock, and its outcome
// by what it held. The run is shown once, with the outcome most copies give and the median
// time, so that one node can move it neither to the top nor to the bottom.
TEST(QuorumLedger, CopiesOfARunMergeIntoOneWithTheMajoritysOutcomeAndTheMedianTime) {
    const long long t = 1'700'000'000'000;
    LedgerEntry a = run_entry("web1", t), b = run_entry("web1", t + 3),
                c = run_entry("web1", 9'000'000'000'000, "lost");
    std::vector<LedgerEntry> h = majority_history({{a}, {b}, {c}}, 2, 10);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].outcome, "ran");
    EXPECT_EQ(h[0].end_ms, t + 3);
    // A copy whose run fields differ is another run: it does not count for this one.
    LedgerEntry other = a;
    other.exit_status = 1;
    EXPECT_FALSE(same_run(a, other));
    EXPECT_TRUE(majority_history({{a}, {other}, {}}, 2, 10).empty());
}

// An abandoned run's copies are written by each node when it notices the run's end, by its own
// clock (lib/abandoned.lua): times and duration differ from node to node. They merge into one
// run by what the run wrote into each node's holder record (host, pid, user, fence), while one
// node alone, however it times or names an abandoned run, adds no row.
TEST(QuorumLedger, CopiesOfAnAbandonedRunMergeWhateverTheirTimesButOneNodeAddsNone) {
    const long long t = 1'700'000'000'000;
    auto abandoned = [&](long long end_ms, long long start_ms) {
        LedgerEntry e = run_entry("web1", end_ms, "abandoned");
        e.exit_status.reset();
        e.start_ms = start_ms;
        e.duration_ms = end_ms - start_ms;
        return e;
    };
    LedgerEntry a = abandoned(t, t - 5'000), b = abandoned(t + 700, t - 4'990),
                c = abandoned(t + 90'000, t - 30'000);
    std::vector<LedgerEntry> h = majority_history({{a}, {b}, {c}}, 2, 10);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].outcome, "abandoned");
    EXPECT_EQ(h[0].end_ms, t + 700);
    EXPECT_EQ(h[0].start_ms, t - 5'000);
    EXPECT_EQ(h[0].duration_ms, 5'700);
    LastRuns r = majority_last_runs({{a, std::nullopt}, {b, std::nullopt}, {}}, 2);
    ASSERT_TRUE(r.last);
    EXPECT_EQ(r.last->outcome, "abandoned");

    // One node's copy, or copies of another fence, pid or host, make no row.
    EXPECT_TRUE(majority_history({{a}, {}, {}}, 2, 10).empty());
    for (auto change : {+[](LedgerEntry& e) { e.fence = 8; }, +[](LedgerEntry& e) { e.pid = 101; },
                        +[](LedgerEntry& e) { e.host = "web2"; }}) {
        LedgerEntry other = b;
        change(other);
        EXPECT_TRUE(majority_history({{a}, {other}, {}}, 2, 10).empty());
    }
    // Nor does a node that calls abandoned a run the others recorded as ended: the abandoned
    // copy and the run's own entries are different runs.
    LedgerEntry ran = run_entry("web1", t);
    h = majority_history({{ran}, {ran}, {abandoned(t + 10, t - 1'000)}}, 2, 10);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].outcome, "ran");
}
