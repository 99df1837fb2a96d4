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

    // The same in steps that never wait, for a caller that waits on many sockets at once in one
    // poll() (a quorum's rounds reach every node from one thread). Each returns the poll events
    // to wait for before calling it again, 0 when done; errors are thrown as above.
    // Whether `ep` can be connected to that way: its one address is known without a name lookup
    // (an IP literal or a unix socket), which alone may block.
    static bool connects_in_steps(const Endpoint& ep);
    // Starts the connect (connects_in_steps(ep) must hold); connect_step() goes on with it, the
    // TLS handshake included, until it returns 0, and past `deadline` throws its timeout.
    static Socket begin_connect(const Endpoint& ep);
    short connect_step(Deadline deadline);
    // Sends what it can of `data`, dropping what went out.
    short write_step(std::string_view& data);
    // Reads what is there: the bytes read (> 0), or 0 with `want` set. Over TLS, a record
    // OpenSSL holds decrypted is read first: only its `want` means that poll() must wait.
    std::size_t read_step(char* buf, std::size_t len, short& want);
    int fd() const { return fd_.get(); }
    // Whether bytes may wait above the socket, where poll() does not see them (TLS's records).
    bool buffers() const { return tls_ != nullptr; }
    // Waits until the socket is ready for `events`: false at the deadline, Cancelled on cancel.
    bool ready(short events, Deadline deadline, int cancel_fd);

  private:
    explicit Socket(Fd fd, std::string peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}
    // Waits for `events` on the socket; throws on deadline or cancel.
    void wait_for(short events, Deadline deadline, int cancel_fd, const char* doing);
    void wait_for(TlsWant want, Deadline deadline, int cancel_fd, const char* doing);
    void start_tls(const Endpoint& ep, Deadline deadline, int cancel_fd);
    // The message for a plain connection dropped: one that never got a byte may be a TLS port.
    std::string plain_drop(const std::string& what) const;
    // connect_step's part after the TCP connect: the socket options, the TLS handshake's start.
    void connected(const Endpoint& ep);
    static short events_of(TlsWant want);

    Fd fd_;
    std::string peer_;
    bool plain_tcp_ = false;
    std::size_t received_ = 0;
    std::unique_ptr<TlsStream> tls_;  // after fd_: the session goes before its descriptor
    // start_connect: the endpoint being connected to, until connect_step() is done.
    std::unique_ptr<Endpoint> connecting_;
};

}  // namespace redlock
