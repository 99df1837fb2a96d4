// --ping (run/ping.hpp): the URL each event goes to, what a message may show of it, what the
// option refuses, and Pings over a fake Pinger: the start ping never holds up its caller, the end
// ping follows it, retries stop where they cannot help, and nothing outlasts the timeout.
#include "run/ping.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "util/errors.hpp"

namespace redlock {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(PingUrl, StartAndFailureAddToThePathAndSuccessIsTheUrlItself) {
    const std::string u = "https://hc-ping.com/0f5d";
    EXPECT_EQ(ping_event_url(u, PingEvent::start), "https://hc-ping.com/0f5d/start");
    EXPECT_EQ(ping_event_url(u, PingEvent::success), u);
    EXPECT_EQ(ping_event_url(u, PingEvent::failure, 3), "https://hc-ping.com/0f5d/3");
    EXPECT_EQ(ping_event_url(u, PingEvent::failure, 255), "https://hc-ping.com/0f5d/255");
    // A trailing slash is not doubled; a query stays at the end.
    EXPECT_EQ(ping_event_url("http://h/p/", PingEvent::start), "http://h/p/start");
    EXPECT_EQ(ping_event_url("http://h/key/job?create=1", PingEvent::failure, 76),
              "http://h/key/job/76?create=1");
    EXPECT_EQ(ping_event_url("http://h/key/job?create=1", PingEvent::success),
              "http://h/key/job?create=1");
}

TEST(PingUrl, AMessageShowsSchemeHostAndPortOnly) {
    EXPECT_EQ(redact_ping_url("https://hc-ping.com/0f5d-uuid"), "https://hc-ping.com/...");
    EXPECT_EQ(redact_ping_url("http://user:pw@127.0.0.1:8000/p/key/job?token=t"),
              "http://127.0.0.1:8000/...");
    EXPECT_EQ(redact_ping_url("HTTP://h:1?k=v"), "http://h:1/...");
    EXPECT_EQ(redact_ping_url("https://h/"), "https://h");
    EXPECT_EQ(redact_ping_url("ftp://h/x"), "(not an http URL)");
}

TEST(PingUrl, OnlyPrintableAsciiHttpUrlsWithAHostWithinTheLengthBoundAreAccepted) {
    for (const char* ok : {"http://h/x", "https://hc-ping.com/uuid", "HTTPS://h:8443/p?q=1",
                           "http://u:p@[::1]:8000/x"})
        EXPECT_NO_THROW(check_ping_url(ok)) << ok;
    EXPECT_NO_THROW(check_ping_url("http://h/" + std::string(ping_url_max - 9, 'a')));
    for (const std::string& bad : std::vector<std::string>{
             "", "ftp://h/x", "file:///etc/passwd", "http:/h/x", "http://", "http:///x",
             "http://u:p@/x", "http://:80/x", "http://h/a b", "http://h/a\nb", "http://h/\x7f",
             "http://h/\xc3\xa9", "hc-ping.com/uuid",
             "http://h/" + std::string(ping_url_max - 8, 'a')})
        EXPECT_THROW(check_ping_url(bad), UsageError) << bad;
}

TEST(PingUrl, ARefusalNeverQuotesTheSecretParts) {
    for (const std::string& bad :
         std::vector<std::string>{"http://user:hunter2@/x-secret", "http://h/x-secret\thunter2",
                                  "gopher://h/x-secret?hunter2"}) {
        try {
            check_ping_url(bad, "REDLOCK_PING");
            ADD_FAILURE() << bad;
        } catch (const UsageError& e) {
            std::string what = e.what();
            EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
            EXPECT_EQ(what.find("secret"), std::string::npos) << what;
            EXPECT_EQ(what.rfind("REDLOCK_PING", 0), 0u) << what;
        }
    }
}

// A Pinger that answers with `answer` and records every URL it was asked for, in order.
class FakePinger : public Pinger {
  public:
    using Answer = std::function<Result(const std::string&, Millis, const std::atomic<bool>&)>;
    explicit FakePinger(Answer a) : answer_(std::move(a)) {}
    Result get(const std::string& url, Millis timeout,
               const std::atomic<bool>& cancelled) override {
        {
            std::lock_guard<std::mutex> g(mutex_);
            urls_.push_back(url);
            timeouts_.push_back(timeout);
        }
        return answer_(url, timeout, cancelled);
    }
    std::vector<std::string> urls() {
        std::lock_guard<std::mutex> g(mutex_);
        return urls_;
    }
    std::vector<Millis> timeouts() {
        std::lock_guard<std::mutex> g(mutex_);
        return timeouts_;
    }

  private:
    Answer answer_;
    std::mutex mutex_;
    std::vector<std::string> urls_;
    std::vector<Millis> timeouts_;
};

Pinger::Result ok(const std::string&, Millis, const std::atomic<bool>&) {
    return {200, ""};
}

// A service that accepts and never answers: the call ends only at its timeout or on a cancel.
Pinger::Result hang(const std::string&, Millis timeout, const std::atomic<bool>& cancelled) {
    auto until = steady::now() + timeout;
    while (!cancelled && steady::now() < until) std::this_thread::sleep_for(1ms);
    return {0, cancelled ? "Callback aborted" : "Timeout was reached"};
}

TEST(Pings, StartThenSuccessInOrder) {
    FakePinger p(ok);
    {
        Pings pings(p, "http://h/c", "job", 10s);
        pings.start();
        pings.end(0);
    }
    EXPECT_EQ(p.urls(), (std::vector<std::string>{"http://h/c/start", "http://h/c"}));
}

TEST(Pings, AFailureCarriesTheExitStatus) {
    FakePinger p(ok);
    {
        Pings pings(p, "http://h/c", "job", 10s);
        pings.start();
        pings.end(76);
    }
    EXPECT_EQ(p.urls(), (std::vector<std::string>{"http://h/c/start", "http://h/c/76"}));
}

// The command is started right after start(): a start ping that hangs must not hold it. The fake
// start ping waits for start() to have returned (10s at most: a start() that waited for the ping
// would return only then), then hangs until the end ping makes it give way.
TEST(Pings, AStartPingThatHangsReturnsAtOnceAndGivesWayToTheEndPing) {
    std::atomic<bool> start_returned{false}, saw_return{false};
    FakePinger p([&](const std::string& url, Millis, const std::atomic<bool>& cancelled) {
        if (!url.ends_with("/start")) return Pinger::Result{200, ""};
        auto until = steady::now() + 10s;
        while (!start_returned && steady::now() < until) std::this_thread::sleep_for(1ms);
        saw_return = start_returned.load();
        while (!cancelled && steady::now() < until + 10s) std::this_thread::sleep_for(1ms);
        return Pinger::Result{0, "Callback aborted"};
    });
    testing::internal::CaptureStderr();
    {
        Pings pings(p, "http://h/c", "job", 2s);
        pings.start();
        start_returned = true;
        pings.end(3);
    }
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(saw_return);
    EXPECT_EQ(p.urls(), (std::vector<std::string>{"http://h/c/start", "http://h/c/3"}));
    EXPECT_EQ(err, "");  // a start that gave way to the end is no failure to warn about
}

// What a ping that does not get through leaves: one warning line that names the event and the
// lock and shows the URL without its secret parts.
TEST(Pings, APingThatFailsIsOneWarningWithoutTheSecret) {
    FakePinger p([](const std::string&, Millis, const std::atomic<bool>&) {
        return Pinger::Result{0, "Couldn't connect to server"};
    });
    testing::internal::CaptureStderr();
    Pings(p, "http://user:hunter2@h:8000/secret-uuid?k=qsecret", "job", 2s).end(3);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(p.urls().size(), 3u);
    EXPECT_EQ(err,
              "redlock-run: could not send the failure ping for lock 'job' to http://h:8000/... "
              "after 3 tries within 2s: Couldn't connect to server; the exit status stays the "
              "run's\n");
    for (const char* secret : {"hunter2", "secret-uuid", "qsecret"})
        EXPECT_EQ(err.find(secret), std::string::npos) << err;
}

TEST(Pings, AServerErrorIsTriedThreeTimesAndANotFoundOnce) {
    for (auto [status, tries] : {std::pair{503L, 3u}, std::pair{404L, 1u}}) {
        FakePinger p([status = status](const std::string&, Millis, const std::atomic<bool>&) {
            return Pinger::Result{status, ""};
        });
        testing::internal::CaptureStderr();
        Pings(p, "http://h/c", "job", 5s).end(0);
        std::string err = testing::internal::GetCapturedStderr();
        EXPECT_EQ(p.urls(), std::vector<std::string>(tries, "http://h/c")) << status;
        EXPECT_NE(err.find("HTTP " + std::to_string(status)), std::string::npos) << err;
        EXPECT_NE(err.find("the exit status stays the run's"), std::string::npos) << err;
    }
}

// The tries share the timeout: a service that never answers cannot take it all on the first,
// and all of them together (the backoffs between them too) stay within it.
TEST(Pings, TheTriesShareTheTimeout) {
    FakePinger p(hang);
    testing::internal::CaptureStderr();
    Pings(p, "http://h/c", "job", 900ms).end(0);
    testing::internal::GetCapturedStderr();
    std::vector<Millis> t = p.timeouts();
    ASSERT_FALSE(t.empty());
    EXPECT_LE(t.size(), 3u);
    EXPECT_LE(t[0], 300ms);
    Millis sum{0};
    for (Millis each : t) sum += each;
    EXPECT_LE(sum, 900ms);
}

}  // namespace
}  // namespace redlock
