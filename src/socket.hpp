// A stream socket to Redis (TCP or unix) where every operation has a deadline and can be
// cancelled through an extra descriptor: hiredis 0.14 only bounds single system calls, and an
// unreachable or stalled server must never hang the tool.
#pragma once

#include <cstddef>
#include <exception>
#include <string_view>

#include "clock.hpp"
#include "fd.hpp"
#include "redis_url.hpp"

namespace redlock {

// Thrown when the cancel descriptor became readable: the caller asked us to give up.
struct Cancelled : std::exception {
    const char* what() const noexcept override { return "operation cancelled"; }
};

class Socket {
  public:
    // Throws RedisUnavailable when no address answers before `deadline`.
    static Socket connect(const Endpoint& ep, Deadline deadline, int cancel_fd);

    void write_all(std::string_view data, Deadline deadline, int cancel_fd);
    // Returns at least one byte; throws RedisUnavailable on timeout, EOF or error.
    std::size_t read_some(char* buf, std::size_t len, Deadline deadline, int cancel_fd);

  private:
    explicit Socket(Fd fd, std::string peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}
    // Waits for `events` on the socket; throws on deadline or cancel.
    void wait_for(short events, Deadline deadline, int cancel_fd, const char* doing);

    Fd fd_;
    std::string peer_;
};

}  // namespace redlock
