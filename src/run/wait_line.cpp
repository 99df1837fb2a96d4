#include "run/wait_line.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "lock/node/holder.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"
#include "util/utf8.hpp"

namespace redlock {
namespace {

// Whole seconds (the time waited rounded down, the time left up, as a countdown shows them): a
// line that ticks each second reads badly with milliseconds in it.
std::string seconds(std::chrono::seconds d) {
    if (d.count() <= 0) return "0s";
    return format_duration(d);
}

std::string ordinal(long long n) {
    long long tens = n % 100;
    const char* suffix = "th";
    if (tens < 11 || tens > 13) {
        switch (n % 10) {
            case 1:
                suffix = "st";
                break;
            case 2:
                suffix = "nd";
                break;
            case 3:
                suffix = "rd";
                break;
            default:
                break;
        }
    }
    return fmt::format("{}{}", n, suffix);
}

// The columns the line may take after "redlock-run: ", one less than the terminal's width (a
// cursor in the last column wraps on some terminals); unbounded when the width is not known.
// Asked at every redraw: the terminal may have been resized.
std::size_t wait_line_columns() {
    constexpr std::size_t prefix = std::string_view("redlock-run: ").size();
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col <= prefix + 1)
        return std::string::npos;
    return ws.ws_col - 1u - prefix;
}

}  // namespace

std::string format_wait_line(const WaitProgress& p) {
    std::string where = p.place > 0 ? fmt::format("{} in the queue; ", ordinal(p.place)) : "";
    std::string left =
        p.left ? fmt::format("{} left", seconds(std::chrono::ceil<std::chrono::seconds>(*p.left)))
               : "no time limit";
    AcquireResult busy = p.busy;
    if (busy.holder_pttl >= 1000) busy.holder_pttl -= busy.holder_pttl % 1000;
    // PTTL -2 with no holder: the key is gone, and the lock is on its way to the queue's head.
    std::string holder;
    if (busy.restart_uptime_s)
        holder = fmt::format(
            "held back: Redis restarted {} without this lock's data, and a holder from "
            "before may still run ({} left of --restart-guard)",
            restarted_ago(*busy.restart_uptime_s),
            format_duration(Millis(std::max(0LL, busy.holder_pttl))));
    else if (p.permits > 1)
        holder = busy.holder_pttl >= 0
                     ? fmt::format("all {} permits are held; the first ends in {}", p.permits,
                                   format_duration(Millis(busy.holder_pttl)))
                     : fmt::format("all {} permits are held", p.permits);
    else if (busy.holder_pttl == -2 && !busy.holder)
        holder = "being handed over";
    else
        holder = fmt::format("held by {}", describe_holder(busy));
    // Printable already, so that fit_wait_line counts the columns the terminal will show.
    return fmt::format("waiting for lock '{}' ({}waited {}, {}): {}", printable(p.key), where,
                       seconds(std::chrono::floor<std::chrono::seconds>(p.waited)), left, holder);
}

std::string fit_wait_line(std::string_view line, std::size_t columns) {
    constexpr std::string_view more = "...";
    if (display_width(line) <= columns) return std::string(line);
    if (columns <= more.size()) return std::string(more.substr(0, columns));
    // The bytes of the first columns - 3 characters: what may be kept.
    std::size_t end = 0;
    for (std::size_t n = 0; n + more.size() < columns && end < line.size(); ++n) {
        std::size_t len = utf8_sequence(line, end);
        end += len == 0 ? 1 : len;
    }
    // Back to where a word ends (a space at `end` itself: the word ends right there), and
    // before the separator after it: "55s left)..." reads better than "55s left):...".
    std::size_t cut = line.rfind(' ', end);
    while (cut != std::string_view::npos && cut > 0 &&
           std::string_view(" ,;:").find(line[cut - 1]) != std::string_view::npos)
        --cut;
    if (cut == std::string_view::npos || cut == 0) cut = end;  // one word wider than it all
    return std::string(line.substr(0, cut)) + std::string(more);
}

WaitLine::WaitLine(LockBackend& lock, bool wanted)
    : lock_(lock), on_(wanted && ::isatty(STDERR_FILENO) == 1) {
    if (on_)
        lock_.set_wait_progress([](const WaitProgress& p) {
            log::status(fit_wait_line(format_wait_line(p), wait_line_columns()));
        });
}

WaitLine::~WaitLine() {
    if (!on_) return;
    lock_.set_wait_progress(nullptr);
    log::clear_status();
}

}  // namespace redlock
