// A stream socket to Redis (TCP or unix) where every operation has a deadline and can be
// cancelled through an extra descriptor: hiredis 0.14 only bounds single system calls, and an
// unreachable or stalled server must never hang the tool. For rediss:// the same socket carries
// TLS (tls.hpp), waiting under the same deadlines.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>

#include "redis/redis_url.hpp"
#include "redis/tls.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"

namespace redlock {

class Socket {
  public:
    // Throws RedisUnavailable when no address answers before `deadline`; for a TLS endpoint
    // the handshake is part of the connect, and TlsError reports its failure.
    static Socket connect(const Endpoint& ep, Deadline deadline, int cancel_fd);

    void write_all(std::string_view data, Deadline deadline, int cancel_fd);
    // Returns at least one byte; throws RedisUnavailable on timeout, EOF or error.
    std::size_t read_some(char* buf, std::size_t len, Deadline deadline, int cancel_fd);

  private:
    explicit Socket(Fd fd, std::string peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}
    // Waits for `events` on the socket; throws on deadline or cancel.
    void wait_for(short events, Deadline deadline, int cancel_fd, const char* doing);
    void wait_for(TlsWant want, Deadline deadline, int cancel_fd, const char* doing);
    void start_tls(const Endpoint& ep, Deadline deadline, int cancel_fd);
    // The message for a plain connection dropped: one that never got a byte may be a TLS port.
    std::string plain_drop(const std::string& what) const;

    Fd fd_;
    std::string peer_;
    bool plain_tcp_ = false;
    std::size_t received_ = 0;
    std::unique_ptr<TlsStream> tls_;  // after fd_: the session goes before its descriptor
};

}  // namespace redlock
