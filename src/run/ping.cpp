#include "run/ping.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <system_error>
#include <type_traits>

#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

// "http" or "https" when `url` starts with one of them and "://" (any case, as RFC 3986 allows).
std::string_view scheme_of(std::string_view url) {
    for (std::string_view s : {"https", "http"}) {
        if (url.size() <= s.size() + 3 || url.substr(s.size(), 3) != "://") continue;
        bool same = std::equal(s.begin(), s.end(), url.begin(), [](char a, char b) {
            return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
        });
        if (same) return s;
    }
    return {};
}

// The authority (user info, host, port) after "scheme://".
std::string_view authority_of(std::string_view url, std::string_view scheme) {
    std::string_view rest = url.substr(scheme.size() + 3);
    return rest.substr(0, rest.find_first_of("/?#"));
}

}  // namespace

void check_ping_url(std::string_view url, std::string_view label) {
    if (url.empty()) throw UsageError(fmt::format("{} needs a URL", label));
    if (url.size() > ping_url_max)
        throw UsageError(fmt::format("{}: the URL is {} bytes long; at most {}", label, url.size(),
                                     ping_url_max));
    // A space or control character would be sent as is or cut the request line; a byte above
    // 0x7e belongs percent-encoded. None is echoed back: the URL is a secret.
    for (char c : url)
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            throw UsageError(fmt::format(
                "{}: the URL holds a space, a control character or a byte that is not ASCII; "
                "percent-encode it",
                label));
    std::string_view scheme = scheme_of(url);
    if (scheme.empty()) throw UsageError(fmt::format("{} needs an http:// or https:// URL", label));
    std::string_view authority = authority_of(url, scheme);
    std::string_view host = authority.substr(authority.rfind('@') + 1);  // npos + 1 == 0
    if (host.empty() || host.front() == ':')
        throw UsageError(fmt::format("{}: the URL {} has no host", label, redact_ping_url(url)));
}

std::string redact_ping_url(std::string_view url) {
    std::string_view scheme = scheme_of(url);
    if (scheme.empty()) return "(not an http URL)";
    std::string_view authority = authority_of(url, scheme);
    std::string_view host = authority.substr(authority.rfind('@') + 1);
    std::size_t shown = scheme.size() + 3 + authority.size();
    bool more = url.size() > shown && url.substr(shown) != "/";
    return fmt::format("{}://{}{}", scheme, host, more ? "/..." : "");
}

std::string ping_event_url(std::string_view url, PingEvent event, int exit_status) {
    if (event == PingEvent::success) return std::string(url);
    std::size_t tail_at = url.find_first_of("?#");
    std::string_view path = url.substr(0, tail_at);
    std::string_view tail = tail_at == std::string_view::npos ? "" : url.substr(tail_at);
    if (path.ends_with('/')) path.remove_suffix(1);
    std::string suffix = event == PingEvent::start
                             ? std::string("start")
                             : std::to_string(std::clamp(exit_status, 1, 255));
    return fmt::format("{}/{}{}", path, suffix, tail);
}

namespace {

// libcurl's ABI, from curl/curl.h (Debian ships no header without libcurl4-*-dev): these
// numbers are fixed for libcurl.so.4, whose soname changes when they would.
using CurlHandle = void;
using CurlCode = int;
using CurlOffset = std::int64_t;
constexpr long curl_global_default = 3;  // CURL_GLOBAL_SSL | CURL_GLOBAL_WIN32
constexpr int opt_url = 10002;
constexpr int opt_write_function = 20011;
constexpr int opt_user_agent = 10018;
constexpr int opt_no_progress = 43;
constexpr int opt_no_signal = 99;
constexpr int opt_timeout_ms = 155;
constexpr int opt_xferinfo_data = 10057;
constexpr int opt_xferinfo_function = 20219;
constexpr int opt_protocols_str = 10318;  // 7.85
constexpr int info_response_code = 0x200002;

// OpenSSL's build first, then GnuTLS's (Debian's libcurl3-gnutls), which has the same ABI.
constexpr std::array<const char*, 2> library_names = {"libcurl.so.4", "libcurl-gnutls.so.4"};

// The functions of libcurl that a ping uses.
struct Curl {
    CurlCode (*curl_global_init)(long) = nullptr;
    CurlHandle* (*curl_easy_init)() = nullptr;
    CurlCode (*curl_easy_setopt)(CurlHandle*, int, ...) = nullptr;
    CurlCode (*curl_easy_perform)(CurlHandle*) = nullptr;
    CurlCode (*curl_easy_getinfo)(CurlHandle*, int, ...) = nullptr;
    void (*curl_easy_cleanup)(CurlHandle*) = nullptr;
    const char* (*curl_easy_strerror)(CurlCode) = nullptr;
};

std::string loader_error() {
    const char* e = ::dlerror();
    return e ? e : "unknown error";
}

Curl load_curl() {
    void* handle = nullptr;
    std::string why;
    for (const char* name : library_names) {
        ::dlerror();
        // RTLD_LOCAL: nothing loaded later may bind to libcurl's symbols (or its TLS library's)
        // by accident.
        handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (handle) break;
        why += (why.empty() ? "" : "; ") + loader_error();
    }
    if (!handle)
        throw LibraryUnavailable(fmt::format(
            "--ping needs libcurl (libcurl.so.4 from Debian's libcurl4, or libcurl3-gnutls), "
            "which could not be loaded: {}",
            why));
    Curl c;
    auto resolve = [handle](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
        if (!fn)
            throw LibraryUnavailable(
                fmt::format("libcurl lacks the function {}: {}", name, loader_error()));
    };
    resolve(c.curl_global_init, "curl_global_init");
    resolve(c.curl_easy_init, "curl_easy_init");
    resolve(c.curl_easy_setopt, "curl_easy_setopt");
    resolve(c.curl_easy_perform, "curl_easy_perform");
    resolve(c.curl_easy_getinfo, "curl_easy_getinfo");
    resolve(c.curl_easy_cleanup, "curl_easy_cleanup");
    resolve(c.curl_easy_strerror, "curl_easy_strerror");
    // Not thread-safe: here, on the main thread, before the start ping's thread exists.
    if (CurlCode rc = c.curl_global_init(curl_global_default); rc != 0)
        throw LibraryUnavailable(
            fmt::format("libcurl could not initialise: {}", c.curl_easy_strerror(rc)));
    return c;
}

extern "C" std::size_t discard_body(char*, std::size_t size, std::size_t n, void*) {
    return size * n;  // the answer's body ("OK") is of no use; libcurl would print it on stdout
}

// Called by libcurl about once a second, and more often while data moves: non-zero aborts.
extern "C" int abort_if_cancelled(void* cancelled, CurlOffset, CurlOffset, CurlOffset, CurlOffset) {
    return static_cast<const std::atomic<bool>*>(cancelled)->load() ? 1 : 0;
}

class CurlPinger : public Pinger {
  public:
    explicit CurlPinger(const Curl& curl) : curl_(curl) {}

    Result get(const std::string& url, Millis timeout,
               const std::atomic<bool>& cancelled) override {
        std::unique_ptr<CurlHandle, void (*)(CurlHandle*)> h(curl_.curl_easy_init(),
                                                             curl_.curl_easy_cleanup);
        if (!h) return {0, "libcurl could not make a handle"};
        CurlHandle* e = h.get();
        curl_.curl_easy_setopt(e, opt_url, url.c_str());
        // A redirect, or a URL that a redirect could turn into file:// or smb://, is not
        // followed: the ping goes where the operator said, or nowhere.
        curl_.curl_easy_setopt(e, opt_protocols_str, "http,https");
        // No SIGALRM for DNS timeouts: this runs on a thread, and redlock-run owns its signals.
        curl_.curl_easy_setopt(e, opt_no_signal, 1L);
        curl_.curl_easy_setopt(e, opt_timeout_ms,
                               static_cast<long>(std::max<long long>(1, timeout.count())));
        curl_.curl_easy_setopt(e, opt_user_agent, "redlock-run");
        curl_.curl_easy_setopt(e, opt_write_function, &discard_body);
        curl_.curl_easy_setopt(e, opt_no_progress, 0L);
        curl_.curl_easy_setopt(e, opt_xferinfo_function, &abort_if_cancelled);
        curl_.curl_easy_setopt(e, opt_xferinfo_data, const_cast<std::atomic<bool>*>(&cancelled));
        CurlCode rc = curl_.curl_easy_perform(e);
        Result r;
        if (rc != 0) {
            r.error = curl_.curl_easy_strerror(rc);
            return r;
        }
        curl_.curl_easy_getinfo(e, info_response_code, &r.http_status);
        return r;
    }

  private:
    const Curl& curl_;
};

const Curl& curl_library() {
    // A throwing initialiser leaves it uninitialised, so a later call tries (and reports) again.
    static const Curl curl = load_curl();
    return curl;
}

const char* event_name(PingEvent e) {
    switch (e) {
        case PingEvent::start:
            return "start";
        case PingEvent::success:
            return "success";
        case PingEvent::failure:
            return "failure";
    }
    return "?";
}

// Healthchecks.io's advice to its curl users (--retry) minus what a retry cannot fix: a 4xx
// other than 408 and 429 says the URL is wrong.
bool worth_retrying(const Pinger::Result& r) {
    return r.http_status == 0 || r.http_status == 408 || r.http_status == 429 ||
           r.http_status >= 500;
}

constexpr int ping_attempts = 3;

}  // namespace

std::unique_ptr<Pinger> curl_pinger() {
    return std::make_unique<CurlPinger>(curl_library());
}

Pings::Pings(Pinger& pinger, std::string url, std::string lock, Millis timeout)
    : pinger_(pinger), url_(std::move(url)), lock_(std::move(lock)), timeout_(timeout) {}

Pings::~Pings() {
    {
        std::lock_guard<std::mutex> g(mutex_);
        cancelled_ = true;
    }
    wake_.notify_all();
    // start_thread_ (a jthread) joins as it goes.
}

bool Pings::pause(std::chrono::steady_clock::time_point until) {
    std::unique_lock<std::mutex> g(mutex_);
    return !wake_.wait_until(g, until, [this] { return cancelled_.load(); });
}

bool Pings::send(PingEvent event, int exit_status, std::chrono::steady_clock::time_point deadline) {
    using std::chrono::steady_clock;
    std::string url = ping_event_url(url_, event, exit_status);
    Backoff backoff(Millis(100), Millis(1000));
    Pinger::Result r;
    int tries = 0;
    // Each try gets an equal share of what is left, so that a server that accepts and never
    // answers cannot eat the retries' time too.
    for (int left = ping_attempts; left > 0; --left) {
        Millis share = std::chrono::floor<Millis>(deadline - steady_clock::now()) / left;
        if (share <= Millis(0) || cancelled_) break;
        ++tries;
        auto began = steady_clock::now();
        r = pinger_.get(url, share, cancelled_);
        if (r.http_status >= 200 && r.http_status < 300) {
            log::verbose("sent the {} ping for lock '{}' to {} (HTTP {}) in {}ms",
                         event_name(event), lock_, redact_ping_url(url_), r.http_status,
                         std::chrono::ceil<Millis>(steady_clock::now() - began).count());
            return true;
        }
        if (!worth_retrying(r) || left == 1) break;
        if (!pause(std::min(deadline, steady_clock::now() + backoff.next()))) break;
    }
    std::string why = r.http_status != 0 ? fmt::format("HTTP {}", r.http_status)
                      : !r.error.empty() ? r.error
                                         : std::string("no time left");
    if (cancelled_ && event == PingEvent::start) {
        // The command ended first: its end ping tells the service more than this one could.
        log::verbose("gave up the start ping for lock '{}' to {} for the end ping ({})", lock_,
                     redact_ping_url(url_), why);
        return false;
    }
    log::warning(
        "could not send the {} ping for lock '{}' to {} after {} tr{} within {}: {}; the {}",
        event_name(event), lock_, redact_ping_url(url_), tries, tries == 1 ? "y" : "ies",
        format_duration(timeout_), why,
        event == PingEvent::start ? "command runs all the same" : "exit status stays the run's");
    return false;
}

void Pings::start() {
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    try {
        start_thread_ = std::jthread([this, deadline] {
            send(PingEvent::start, 0, deadline);
            std::lock_guard<std::mutex> g(mutex_);
            start_done_ = true;
            wake_.notify_all();
        });
    } catch (const std::system_error& e) {
        // No thread at a process limit: the start ping is dropped, the command is not held up.
        log::warning("could not send the start ping for lock '{}': no thread for it ({})", lock_,
                     e.code().message());
    }
}

void Pings::end(int exit_status) {
    auto now = std::chrono::steady_clock::now();
    auto deadline = now + timeout_;
    if (start_thread_.joinable()) {
        // The start ping first, so that the service sees the events in order; but it gets at
        // most half of the end's time before it gives way, so that both fit in one timeout.
        {
            std::unique_lock<std::mutex> g(mutex_);
            wake_.wait_until(g, now + timeout_ / 2, [this] { return start_done_; });
            cancelled_ = true;
        }
        wake_.notify_all();
        start_thread_.join();
        cancelled_ = false;
    }
    send(exit_status == 0 ? PingEvent::success : PingEvent::failure, exit_status, deadline);
}

}  // namespace redlock
