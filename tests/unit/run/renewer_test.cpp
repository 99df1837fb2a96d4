// The renewer thread against a fake backend: it renews every `every` from when the last renewal
// was sent, stops when told (aborting a renewal in flight), reports "not ours" as an event, and
// treats unknown outcomes as transient: retried, never extending the lease, never a loss by
// itself (the main loop decides that at valid_until()).
#include "run/renewer.hpp"

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <thread>

#include "../eventually.hpp"
#include "../fake_clock.hpp"
#include "fake_backend.hpp"

namespace redlock {
namespace {

using fake::Call;
using fake::Renew;
using namespace std::chrono_literals;

bool readable(int fd, Millis wait = Millis(0)) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) > 0;
}

std::size_t answered_renewals(const fake::Backend& lock) {
    std::size_t n = 0;
    for (const Call& c : lock.calls(Call::Kind::renew))
        if (!c.result.empty()) ++n;
    return n;
}

const std::string token = "token-1";

// On virtual time (fake_clock.hpp): the renewer's thread is the clock's only user, so time jumps
// from one renewal to the next, and the spacing checked below is exact.
TEST(Renewer, RenewsEveryIntervalFromTheLastSendUntilStopped) {
    fake::Clock clock(0);
    fake::Backend lock;
    lock.set_clock(clock);
    Millis ttl(2000), every(50);
    Deadline start = clock.now();
    Renewer renewer(lock, lock.keys(), token, ttl, every, start, clock);
    std::vector<Deadline> extended;  // written on the renewer thread, read after stop()
    renewer.set_on_extended([&](Deadline d) { extended.push_back(d); });
    renewer.start();
    ASSERT_TRUE(eventually([&] { return answered_renewals(lock) >= 4; }));
    renewer.stop();
    // stop() joined the thread: whatever it sent is all it will ever send.
    std::vector<Call> renews = lock.calls(Call::Kind::renew);
    Deadline stopped_at = clock.now();
    for (const Call& c : renews) EXPECT_LE(c.at, stopped_at);

    // With the lease far off, each renewal's deadline is exactly when it was sent plus the
    // backend's renew_timeout(), and each is sent `every` after the last was.
    Millis timeout = lock.renew_timeout();
    EXPECT_EQ(renews.front().at, start + every);
    for (std::size_t i = 0; i < renews.size(); ++i) {
        EXPECT_EQ(renews[i].token, token);
        EXPECT_EQ(renews[i].key, lock.keys().key);
        EXPECT_EQ(renews[i].ttl, ttl);
        EXPECT_EQ(renews[i].deadline, renews[i].at + timeout);
        if (i > 0) {
            EXPECT_EQ(renews[i].at - renews[i - 1].at, every) << i;
        }
    }
    // Every answered renewal moved the lease end to (its send + ttl - margin), and told the
    // watchdog the same.
    std::size_t answered = answered_renewals(lock);
    ASSERT_EQ(extended.size(), answered);
    const Call& last = renews[answered - 1];
    EXPECT_EQ(renewer.valid_until(), lock.lease_end(last.at, ttl));
    EXPECT_EQ(extended.back(), renewer.valid_until());
    EXPECT_FALSE(readable(renewer.event_fd()));
}

// A lock a release handed over (waiter.hpp): the lease from its start is the claim window, not
// the TTL, until the first renewal, which is due a quarter of the claim in (before `every`);
// from then on the TTL, every `every`.
TEST(Renewer, AHandedOverLeaseIsTheClaimWindowUntilAnEarlyFirstRenewal) {
    fake::Clock clock(0);
    fake::Backend lock;
    lock.set_clock(clock);
    Millis ttl(30'000), every(10'000), claim(5'000);
    Deadline start = clock.now();
    Renewer renewer(lock, lock.keys(), token, ttl, every, start, clock, claim);
    EXPECT_EQ(renewer.valid_until(), lock.lease_end(start, claim));
    EXPECT_EQ(renewer.first_renewal(), start + claim / 4);
    EXPECT_FALSE(renewer.renewed());
    renewer.start();
    ASSERT_TRUE(eventually([&] { return answered_renewals(lock) >= 2; }));
    renewer.stop();
    std::vector<Call> renews = lock.calls(Call::Kind::renew);
    ASSERT_GE(renews.size(), 2u);
    EXPECT_EQ(renews[0].at, start + claim / 4);
    EXPECT_EQ(renews[0].ttl, ttl);
    EXPECT_EQ(renews[1].at - renews[0].at, every);
    EXPECT_TRUE(renewer.renewed());
    EXPECT_EQ(renewer.valid_until(), lock.lease_end(renews[answered_renewals(lock) - 1].at, ttl));
}

TEST(Renewer, NotOwnerIsReportedAsAnEventAndEndsTheRenewals) {
    fake::Clock clock(0);
    fake::Backend lock;
    lock.set_clock(clock);
    lock.script_renewals({{Renew::not_owner}});
    Renewer renewer(lock, lock.keys(), token, Millis(2000), Millis(20), clock.now(), clock);
    Deadline initial = renewer.valid_until();
    renewer.start();
    ASSERT_TRUE(readable(renewer.event_fd(), Millis(5000)));
    EXPECT_NE(renewer.lost_reason().find("no longer holds this run's token"), std::string::npos)
        << renewer.lost_reason();
    renewer.stop();  // joins a thread that had ended by itself: nothing more was sent
    EXPECT_EQ(lock.calls(Call::Kind::renew).size(), 1u);
    EXPECT_EQ(renewer.valid_until(), initial);  // a renewal that failed extends nothing
}

TEST(Renewer, AKeyOfAnotherTypeIsALoss) {
    fake::Backend lock;
    lock.script_renewals({{Renew::data_error}});
    Renewer renewer(lock, lock.keys(), token, Millis(2000), Millis(20), BootClock::now());
    renewer.start();
    ASSERT_TRUE(readable(renewer.event_fd(), Millis(5000)));
    EXPECT_NE(renewer.lost_reason().find("the key was replaced"), std::string::npos)
        << renewer.lost_reason();
}

TEST(Renewer, TransientFailuresAreRetriedWithoutExtendingTheLease) {
    fake::Backend lock;
    lock.script_renewals({{Renew::unavailable}, {Renew::unavailable}}, {Renew::renewed});
    Deadline start = BootClock::now();
    Renewer renewer(lock, lock.keys(), token, Millis(2000), Millis(20), start);
    Deadline initial = renewer.valid_until();
    // What the renewer showed when the third renewal (the first to succeed) came in.
    std::mutex seen_mutex;
    std::optional<Deadline> valid_at_third;
    std::string failure_at_third;
    lock.on_call([&](const Call& c) {
        if (c.kind != Call::Kind::renew || lock.calls(Call::Kind::renew).size() != 3) return;
        std::lock_guard g(seen_mutex);
        valid_at_third = renewer.valid_until();
        failure_at_third = renewer.last_failure();
    });
    renewer.start();
    ASSERT_TRUE(eventually([&] { return answered_renewals(lock) >= 3; }));
    renewer.stop();
    {
        std::lock_guard g(seen_mutex);
        ASSERT_TRUE(valid_at_third);
        EXPECT_EQ(*valid_at_third, initial);
        EXPECT_EQ(failure_at_third, "fake: Redis is restarting");
    }
    EXPECT_GT(renewer.valid_until(), initial);
    EXPECT_EQ(renewer.last_failure(), "");
    EXPECT_FALSE(readable(renewer.event_fd())) << "a transient failure is not a loss";
}

TEST(Renewer, StopAbortsARenewalInFlight) {
    fake::Backend lock;
    lock.script_renewals({{Renew::renewed, Millis(60'000)}});
    lock.set_renew_timeout(Millis(120'000));
    Renewer renewer(lock, lock.keys(), token, Millis(600'000), Millis(10), BootClock::now());
    renewer.start();
    ASSERT_TRUE(eventually([&] { return !lock.calls(Call::Kind::renew).empty(); }));
    renewer.stop();  // would take a minute without the cancel descriptor
    std::vector<Call> renews = lock.calls(Call::Kind::renew);
    ASSERT_EQ(renews.size(), 1u);
    EXPECT_EQ(renews[0].result, "cancelled");
    EXPECT_FALSE(readable(renewer.event_fd()));
}

// A renewal answered after the lease ended proves nothing, so it is not waited for past it; and
// the renewer does not declare the loss itself: the main loop does, at valid_until(). On virtual
// time, the renewal's minute-long answer is cut at the lease end exactly.
TEST(Renewer, NoRenewalWaitsPastTheLeaseEnd) {
    fake::Clock clock(0);
    fake::Backend lock;
    lock.set_clock(clock);
    lock.set_renew_timeout(Millis(60'000));
    lock.script_renewals({}, {Renew::renewed, Millis(60'000)});
    Millis ttl(500);
    Deadline start = clock.now();
    Renewer renewer(lock, lock.keys(), token, ttl, Millis(100), start, clock);
    Deadline lease_end = renewer.valid_until();
    ASSERT_EQ(lease_end, lock.lease_end(start, ttl));
    renewer.start();
    ASSERT_TRUE(eventually([&] { return answered_renewals(lock) >= 1; }));
    // The renewer ends by itself once no renewal can be sent before the lease end; stop() only
    // joins it.
    renewer.stop();
    std::vector<Call> renews = lock.calls(Call::Kind::renew);
    ASSERT_EQ(renews.size(), 1u) << "retried after the lease ended";
    EXPECT_EQ(renews[0].at, start + Millis(100));
    EXPECT_EQ(renews[0].deadline, lease_end);
    EXPECT_EQ(renews[0].result, "timed out");
    EXPECT_FALSE(readable(renewer.event_fd()));
    EXPECT_EQ(renewer.valid_until(), lease_end);
    EXPECT_GE(clock.now(), lease_end);
}

}  // namespace
}  // namespace redlock
