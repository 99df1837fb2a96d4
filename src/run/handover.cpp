#include "run/handover.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>

#include "lock/backend.hpp"
#include "run/run_record.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

constexpr std::string_view magic = "rl-handover 1\n";
// Far more than any command line and environment (the kernel's own limit for both together is
// a quarter of the stack limit, 2 MiB by default).
constexpr std::size_t max_state_bytes = 16 << 20;
constexpr std::size_t max_items = 1 << 20;

// Each item is its length in decimal, ':' and its bytes: any bytes, a NUL or a newline too.
void put(std::string& out, std::string_view item) {
    out += std::to_string(item.size());
    out += ':';
    out += item;
}

class Reader {
  public:
    explicit Reader(std::string_view in) : in_(in) {}
    std::string_view item() {
        std::size_t colon = in_.find(':');
        if (colon == std::string_view::npos) throw DataError("hand-over state: cut short");
        std::optional<long long> n = parse_integer(in_.substr(0, colon), 0, LLONG_MAX);
        if (!n || static_cast<unsigned long long>(*n) > in_.size() - colon - 1)
            throw DataError("hand-over state: an item's length is out of range");
        std::string_view out = in_.substr(colon + 1, static_cast<std::size_t>(*n));
        in_.remove_prefix(colon + 1 + out.size());
        return out;
    }
    long long number(const char* what, long long min, long long max) {
        std::optional<long long> n = parse_integer(item(), min, max);
        if (!n) throw DataError(fmt::format("hand-over state: {} is out of range", what));
        return *n;
    }
    std::vector<std::string> list(const char* what) {
        auto count = static_cast<std::size_t>(number(what, 0, max_items));
        std::vector<std::string> out;
        for (std::size_t i = 0; i < count; ++i) out.emplace_back(item());
        return out;
    }
    bool done() const { return in_.empty(); }

  private:
    std::string_view in_;
};

struct Invocation {
    std::vector<std::string> argv;
    std::vector<std::string> env;
};

std::optional<Invocation>& remembered() {
    static std::optional<Invocation> invocation;
    return invocation;
}

}  // namespace

std::string encode_handover(const HandoverState& s) {
    std::string out(magic);
    put(out, s.token);
    put(out, std::to_string(s.fence));
    put(out, std::to_string(s.supervisor_pid));
    put(out, std::to_string(s.acquired_boot_ns));
    put(out, std::to_string(s.started_unix_ms));
    put(out, s.slot ? std::to_string(*s.slot) : std::string());
    for (const auto* list : {&s.argv, &s.env}) {
        put(out, std::to_string(list->size()));
        for (const std::string& item : *list) put(out, item);
    }
    return out;
}

HandoverState decode_handover(std::string_view stored) {
    if (stored.substr(0, magic.size()) != magic)
        throw DataError("hand-over state: not written by this version of redlock-run");
    Reader r(stored.substr(magic.size()));
    HandoverState s;
    s.token = std::string(r.item());
    if (s.token.empty()) throw DataError("hand-over state: no token");
    s.fence = r.number("the fence", 1, LLONG_MAX);
    s.supervisor_pid = r.number("the pid", 1, INT_MAX);
    s.acquired_boot_ns = r.number("the acquire time", 0, LLONG_MAX);
    s.started_unix_ms = r.number("the start time", 0, max_time_ms);
    if (std::string_view slot = r.item(); !slot.empty()) {
        std::optional<long long> n = parse_integer(slot, -max_slot, max_slot);
        if (!n) throw DataError("hand-over state: the slot is out of range");
        s.slot = *n;
    }
    s.argv = r.list("the argument count");
    s.env = r.list("the variable count");
    if (s.argv.empty()) throw DataError("hand-over state: no command line");
    if (!r.done()) throw DataError("hand-over state: bytes after the end");
    return s;
}

void remember_invocation(std::vector<std::string> argv, char** envp) {
    if (argv.empty()) return remembered().reset();
    Invocation i;
    i.argv = std::move(argv);
    for (char** e = envp; e && *e; ++e) i.env.emplace_back(*e);
    remembered() = std::move(i);
}

Fd handover_file(const std::string& token, long long fence, std::optional<long long> slot,
                 Deadline acquired, std::chrono::system_clock::time_point started) {
    const std::optional<Invocation>& inv = remembered();
    if (!inv) return {};
    HandoverState s;
    s.argv = inv->argv;
    s.env = inv->env;
    s.token = token;
    s.fence = fence;
    s.supervisor_pid = getpid();
    s.acquired_boot_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(acquired.time_since_epoch()).count();
    s.started_unix_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(started.time_since_epoch()).count();
    s.slot = slot;
    std::string bytes = encode_handover(s);
    // Sealed: nothing the command runs (it could find the file in /proc/<watchdog>/fd as the
    // same user) can change what the hand-over releases or records.
    Fd low(memfd_create("rl-handover", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!low) {
        log::verbose("no hand-over for lock: memfd_create: {}", std::strerror(errno));
        return {};
    }
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        ssize_t n = ::write(low.get(), p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return {};
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (fcntl(low.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
        return {};
    // Above the descriptors the watchdog's child arranges (run/watchdog.cpp).
    return Fd(fcntl(low.get(), F_DUPFD_CLOEXEC, 10));
}

HandoverState read_handover(int fd) {
    std::string bytes;
    char buf[65536];
    for (off_t at = 0;;) {
        // pread: the file offset is the writer's, at its end.
        ssize_t n = ::pread(fd, buf, sizeof buf, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw Error(fmt::format("cannot read the hand-over state: {}", std::strerror(errno)),
                        exit_code::internal);
        if (n == 0) break;
        bytes.append(buf, static_cast<std::size_t>(n));
        at += n;
        if (bytes.size() > max_state_bytes) throw DataError("hand-over state: too large");
    }
    return decode_handover(bytes);
}

bool group_alive(long group) {
    std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
    if (!proc) return true;  // cannot tell: as if alive
    while (const dirent* e = readdir(proc.get())) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        Fd f(::open(fmt::format("/proc/{}/stat", e->d_name).c_str(), O_RDONLY | O_CLOEXEC));
        if (!f) continue;  // gone meanwhile
        char buf[512];
        ssize_t n = ::read(f.get(), buf, sizeof buf - 1);
        if (n <= 0) continue;
        // "pid (comm) state ppid pgrp ...": comm may hold anything, so from its last ')'.
        std::string_view stat(buf, static_cast<std::size_t>(n));
        std::size_t close = stat.rfind(')');
        if (close == std::string_view::npos || close + 2 >= stat.size()) continue;
        stat.remove_prefix(close + 2);
        char state = stat[0];
        std::size_t a = stat.find(' '), b = stat.find(' ', a + 1), c = stat.find(' ', b + 1);
        if (c == std::string_view::npos) continue;
        std::optional<long long> pgrp = parse_integer(stat.substr(b + 1, c - b - 1), 0, INT_MAX);
        if (pgrp && *pgrp == group && state != 'Z' && state != 'X') return true;
    }
    return false;
}

int hand_over(const RunOptions& options, const HandoverState& state, long group) {
    log::set_verbose(options.conn.verbose);
    log::set_syslog(options.syslog);
    std::unique_ptr<LockBackend> lock =
        make_backend(LockKeys::make(options.name, options.conn.prefix), options.conn,
                     options.replicas, options.permits, options.shared);
    return hand_over(options, state, group, *lock);
}

int hand_over(const RunOptions& options, const HandoverState& state, long group,
              LockBackend& lock) {
    // Never a release while a process of the command may still act: the next holder must not
    // overlap it. Polled: nothing tells a process outside the group when its last member exits.
    while (group_alive(group)) ::usleep(2'000);
    FinishedRun run;
    run.outcome = Outcome::killed;
    run.held = true;
    run.fence = state.fence;
    run.slot = state.slot;
    Deadline acquired{std::chrono::nanoseconds(state.acquired_boot_ns)};
    run.duration =
        std::max(Millis(0), std::chrono::duration_cast<Millis>(BootClock::now() - acquired));
    run.started = std::chrono::system_clock::time_point(Millis(state.started_unix_ms));
    run.ended = std::chrono::system_clock::now();
    // As a shell reports a process that SIGKILL ended: the watchdog sent it to the command's
    // group, and redlock-run itself is gone.
    run.exit_code = 128 + SIGKILL;
    const std::string& key = lock.keys().key;
    std::string pid = std::to_string(state.supervisor_pid);
    Release r;
    std::optional<RunRecord> rec = run_record(options, run);
    if (rec) {
        rec->entry.pid = state.supervisor_pid;  // the run's, not this process's
        r = lock.finish(state.token, Millis(0), *rec);
        check_recorded(lock.keys(), *rec, r);
    } else {
        r = lock.release(state.token, Millis(0));
    }
    int code = exit_code::ok;
    switch (r.outcome) {
        case Release::Outcome::released:
            log::error("lock '{}': redlock-run (pid {}) died; its watchdog released the lock{}",
                       key, pid, rec && r.recorded ? " and recorded the run as killed" : "");
            break;
        case Release::Outcome::lost:
            log::error("lock '{}': redlock-run (pid {}) died; the lock {}", key, pid, r.detail);
            code = exit_code::lock_lost;
            break;
        case Release::Outcome::unknown:
            log::error(
                "lock '{}': redlock-run (pid {}) died; its watchdog could not release the lock "
                "({}); it expires by itself within {}",
                key, pid, r.detail, format_duration(options.ttl));
            code = exit_code::unavailable;
            break;
    }
    record_in_metrics(options, run);
    return code;
}

}  // namespace redlock
