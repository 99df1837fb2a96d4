#include "lock/wait_progress.hpp"

#include <algorithm>

namespace redlock {

void WaitView::saw(const AcquireResult& busy, std::optional<long long> place) {
    // The reads between attempts only say that shared holders hold it; the count and the holder
    // the last attempt named stay on the line (its age moved on by the time since).
    if (busy.shared && busy.shared_holders == 0 && busy_.shared && busy_.shared_holders > 0) {
        AcquireResult kept = busy;
        kept.shared_holders = busy_.shared_holders;
        kept.holder = busy_.holder;
        if (kept.holder && kept.holder->now_ms > 0)
            kept.holder->now_ms +=
                std::chrono::duration_cast<Millis>(BootClock::now() - read_at_).count();
        busy_ = kept;
    } else {
        busy_ = busy;
    }
    if (place) place_ = *place;
    read_at_ = clock_.now();
}

void WaitView::show() {
    if (!fn_) return;
    Deadline now = clock_.now();
    auto since_read = std::chrono::duration_cast<Millis>(now - read_at_).count();
    WaitProgress p;
    p.key = key_;
    p.waited = std::chrono::duration_cast<Millis>(now - start_);
    if (give_up_ != Deadline::max())
        p.left = std::max(Millis(0), std::chrono::ceil<Millis>(give_up_ - now));
    p.busy = busy_;
    // Redis's clock and the TTL as they are now, not at the read: a line that ticks each second
    // needs no read each second (a TTL never goes below zero here: the key is gone by then).
    if (p.busy.holder_pttl >= 0)
        p.busy.holder_pttl = std::max(0LL, p.busy.holder_pttl - since_read);
    if (p.busy.holder && p.busy.holder->now_ms > 0) p.busy.holder->now_ms += since_read;
    if (p.busy.restart_uptime_s) *p.busy.restart_uptime_s += since_read / 1000;
    p.place = place_;
    p.permits = permits_;
    shown_ = now;
    fn_(p);
}

}  // namespace redlock
