// --ping URL: dead-man pings for the run that holds the lock, in Healthchecks.io's URLs: URL/start
// when the command starts, URL when the run exits 0, URL/<exit status> otherwise. Sent with
// Debian's libcurl, loaded with dlopen only when --ping is given, so that other runs do not pay
// for it (and its dozen dependencies) at start-up.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "util/clock.hpp"

namespace redlock {

enum class PingEvent { start, success, failure };

inline constexpr std::size_t ping_url_max = 2048;  // far beyond any service's ping URL
inline constexpr Millis ping_timeout_default{10'000};
inline constexpr Millis ping_timeout_min{100};
inline constexpr Millis ping_timeout_max{60'000};

// UsageError unless `url` is an http:// or https:// URL with a host, of at most ping_url_max
// bytes, all printable ASCII (no space, no control character). The message never quotes the
// URL whole: its path or query is the check's secret. `label`: how the message names the option.
void check_ping_url(std::string_view url, std::string_view label = "--ping");

// The URL an event goes to: start: URL/start; success: URL; failure: URL/<exit status>, the
// status 1-255 (Healthchecks.io reads a non-zero status as a failure). The suffix is added to the
// path, before a query (?...) or fragment, and a trailing '/' of the path is not doubled.
std::string ping_event_url(std::string_view url, PingEvent event, int exit_status = 0);

// `url` fit for a message: its scheme, host and port, and "/..." for whatever follows. The user
// info (user:password@), the path (Healthchecks.io's check UUID, Cronitor's API key) and the
// query may each hold the secret that lets anyone ping the check.
std::string redact_ping_url(std::string_view url);

// One HTTP GET: the seam where unit tests plug in a fake.
class Pinger {
  public:
    struct Result {
        long http_status = 0;  // 0: no answer (connect failure, timeout, cancelled)
        std::string error;     // why there was no answer; never the URL
    };
    virtual ~Pinger() = default;
    // Gives up after `timeout`, and soon after `cancelled` turns true.
    virtual Result get(const std::string& url, Millis timeout,
                       const std::atomic<bool>& cancelled) = 0;
};

// libcurl's (libcurl.so.4, dlopen). LibraryUnavailable (69) when it cannot be loaded.
std::unique_ptr<Pinger> curl_pinger();

// The pings of one run. Each ping is tried up to 3 times (again on no answer, 408, 429 and 5xx,
// after a short backoff) within `timeout` in all; one that does not get through is a warning,
// never the run's failure.
class Pings {
  public:
    Pings(Pinger& pinger, std::string url, std::string lock, Millis timeout);
    ~Pings();  // cancels a start ping still in flight
    Pings(const Pings&) = delete;
    Pings& operator=(const Pings&) = delete;

    // The start ping, from a thread of its own: returns at once, so the command never waits
    // for the network.
    void start();
    // The end ping for the run's exit status, on the caller's thread, so that it is sent before
    // redlock-run exits; with a start ping still in flight, that one gives way first. Returns
    // within `timeout` (and the second libcurl may take to notice a cancel).
    void end(int exit_status);

  private:
    // Tries until `deadline`; true when the service answered 2xx.
    bool send(PingEvent event, int exit_status, std::chrono::steady_clock::time_point deadline);
    // Waits until `until` or a cancel; false on a cancel.
    bool pause(std::chrono::steady_clock::time_point until);

    Pinger& pinger_;
    std::string url_;
    std::string lock_;
    Millis timeout_;
    std::atomic<bool> cancelled_{false};
    bool start_done_ = false;  // under mutex_
    std::mutex mutex_;
    std::condition_variable wake_;
    std::jthread start_thread_;
};

}  // namespace redlock
