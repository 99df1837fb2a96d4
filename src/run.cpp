#include "run.hpp"

#include <poll.h>

#include <algorithm>
#include <optional>

#include "child.hpp"
#include "duration.hpp"
#include "errors.hpp"
#include "lock.hpp"
#include "log.hpp"
#include "renewer.hpp"
#include "signals.hpp"
#include "token.hpp"

namespace redlock {
namespace {

Millis since(Deadline start) {
    return std::chrono::duration_cast<Millis>(BootClock::now() - start);
}

class Run {
public:
    explicit Run(const RunOptions& o)
        : opt_(o),
          keys_(LockKeys::make(o.name, o.conn.prefix)),
          conn_(o.conn.endpoint, o.conn.timeouts),
          node_(conn_),
          token_(new_token()) {}

    int execute();

private:
    bool acquire();
    int supervise(Child& child, Renewer& renewer);
    void lose(Child& child, Renewer& renewer, const std::string& reason);
    void release();

    const RunOptions& opt_;
    SignalEvents signals_;  // first: every thread created later inherits the blocked mask
    LockKeys keys_;
    Connection conn_;
    LockNode node_;
    std::string token_;
    long long fence_ = 0;
    Deadline lease_start_{};
    bool lost_ = false;
    std::optional<Deadline> kill_at_;
};

bool Run::acquire() {
    lease_start_ = BootClock::now();
    AcquireResult r = node_.acquire(keys_, token_, opt_.ttl);
    if (r.acquired) {
        fence_ = r.fence;
        log::verbose("acquired lock '{}' on {} (fence {}) in {}", keys_.key, node_.describe(),
                     fence_, format_duration(since(lease_start_)));
        return true;
    }
    if (!opt_.quiet) {
        std::string left = r.holder_pttl >= 0
                               ? fmt::format(", expires in {}", format_duration(Millis(r.holder_pttl)))
                               : std::string(", with no expiry set");
        log::info("lock '{}' is held by another process{}; not running the command", keys_.key,
                  left);
    }
    return false;
}

void Run::lose(Child& child, Renewer& renewer, const std::string& reason) {
    if (lost_) return;
    lost_ = true;
    renewer.stop();  // never extend a lock we have declared lost
    switch (opt_.on_lost) {
        case OnLost::term:
            log::error("lock '{}' lost: {}; sending SIGTERM to the command (SIGKILL after {})",
                       keys_.key, reason, format_duration(opt_.kill_after));
            child.signal(SIGTERM);
            child.signal(SIGCONT);  // a stopped command must wake up to die
            kill_at_ = BootClock::now() + opt_.kill_after;
            break;
        case OnLost::kill:
            log::error("lock '{}' lost: {}; sending SIGKILL to the command", keys_.key, reason);
            child.signal(SIGKILL);
            break;
        case OnLost::ignore:
            log::error("lock '{}' lost: {}; the command keeps running (--on-lost ignore)",
                       keys_.key, reason);
            break;
    }
}

int Run::supervise(Child& child, Renewer& renewer) {
    while (!child.try_reap()) {
        Deadline now = BootClock::now();
        if (!lost_ && now >= renewer.valid_until())
            lose(child, renewer,
                 fmt::format("no renewal succeeded within the ttl ({}); Redis may already have "
                             "given it to someone else",
                             format_duration(opt_.ttl)));
        if (kill_at_ && now >= *kill_at_) {
            log::error("the command outlived --kill-after {}; sending SIGKILL",
                       format_duration(opt_.kill_after));
            child.signal(SIGKILL);
            kill_at_.reset();
        }

        Deadline wake = Deadline::max();
        if (!lost_) wake = renewer.valid_until();
        if (kill_at_) wake = std::min(wake, *kill_at_);
        pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {renewer.event_fd(), POLLIN, 0}};
        int n = ::poll(fds, lost_ ? 1 : 2, wake == Deadline::max() ? -1 : millis_until(wake));
        if (n <= 0) continue;
        if (!lost_ && (fds[1].revents & POLLIN)) lose(child, renewer, renewer.lost_reason());
        if (fds[0].revents & POLLIN) {
            while (auto sig = signals_.next()) {
                if (*sig == SIGCHLD) continue;  // reaped at the top of the loop
                log::verbose("forwarding signal {} to the command", *sig);
                child.signal(*sig);
            }
        }
    }
    return exit_status_of(child.wait_status());
}

void Run::release() {
    Deadline start = BootClock::now();
    for (int attempt = 1;; ++attempt) {
        try {
            switch (node_.release(keys_, token_)) {
                case ReleaseResult::released:
                    log::verbose("released lock '{}' in {}", keys_.key,
                                 format_duration(since(start)));
                    break;
                case ReleaseResult::absent:
                    if (!lost_) log::warning("lock '{}' had expired before release", keys_.key);
                    break;
                case ReleaseResult::not_owner:
                    log::warning("lock '{}' is now held by someone else; left it alone",
                                 keys_.key);
                    break;
            }
            return;
        } catch (const RedisUnavailable& e) {
            // The connection may simply have gone stale during a long run: one fresh try.
            if (attempt < 2) continue;
            log::warning("could not release lock '{}' ({}); it expires by itself within {}",
                         keys_.key, e.what(), format_duration(opt_.ttl));
            return;
        } catch (const Error& e) {
            log::warning("could not release lock '{}' ({}); it expires by itself within {}",
                         keys_.key, e.what(), format_duration(opt_.ttl));
            return;
        }
    }
}

int Run::execute() {
    if (!acquire()) return opt_.conflict_exit_code;

    Child::Env env{{"REDLOCK_NAME", keys_.name},
                   {"REDLOCK_KEY", keys_.key},
                   {"REDLOCK_TOKEN", token_},
                   {"REDLOCK_FENCE", std::to_string(fence_)},
                   {"REDLOCK_TTL_MS", std::to_string(opt_.ttl.count())}};
    std::optional<Child> child;
    try {
        child.emplace(Child::spawn(opt_.command, env, signals_.original_mask()));
    } catch (const SpawnError&) {
        release();
        throw;
    }
    log::verbose("started '{}' as pid {}", opt_.command.front(), child->pid());

    int status;
    {
        Renewer renewer(node_, keys_, token_, opt_.ttl, opt_.renew_every, lease_start_);
        renewer.start();
        status = supervise(*child, renewer);
    }  // the renewer is stopped and joined before release: it must never outlive the lock
    release();
    return lost_ ? exit_code::lock_lost : status;
}

}  // namespace

int run_command(const RunOptions& options) {
    log::set_verbose(options.conn.verbose);
    Run run(options);
    return run.execute();
}

}  // namespace redlock
