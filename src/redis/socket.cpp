#include "redis/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "util/errors.hpp"

namespace redlock {
namespace {

struct AddrinfoDeleter {
    void operator()(addrinfo* ai) const { freeaddrinfo(ai); }
};
using Addrinfo = std::unique_ptr<addrinfo, AddrinfoDeleter>;

struct Resolution {
    std::mutex mutex;
    int status = 0;
    Addrinfo result;
    Fd done_fd{eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
};

bool poll_with_cancel(int fd, short events, Deadline deadline, int cancel_fd);

// One address to try, copied out of getaddrinfo's list (or parsed from an IPv4 literal).
struct Address {
    sockaddr_storage addr{};
    socklen_t len = 0;
    int family() const { return addr.ss_family; }
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&addr); }
};

// An IPv4 literal (the usual 127.0.0.1), parsed without getaddrinfo's ~10 µs of set-up. IPv6
// literals and host names go through getaddrinfo.
std::optional<Address> ipv4_literal(const Endpoint& ep) {
    Address a;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a.addr);
    if (inet_pton(AF_INET, ep.host.c_str(), &v4->sin_addr) != 1) return std::nullopt;
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(ep.port));
    a.len = sizeof *v4;
    return a;
}

std::vector<Address> addresses_of(const addrinfo* list) {
    std::vector<Address> out;
    for (const addrinfo* ai = list; ai; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
        Address& a = out.emplace_back();
        std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
        a.len = ai->ai_addrlen;
    }
    return out;
}

// getaddrinfo has no timeout of its own, so a name lookup runs on a helper thread that we stop
// waiting for at the deadline or on cancel (it finishes on its own and frees its state). During
// a network cut this is where a renewal would otherwise stall past the lease.
std::vector<Address> resolve(const Endpoint& ep, Deadline deadline, int cancel_fd) {
    // Every source checks its ports (URL, sentinel, CLUSTER SLOTS, MOVED); this is the last
    // line before a port is cut to 16 bits.
    if (ep.port < 1 || ep.port > 65535)
        throw RedisUnavailable(fmt::format("{}: port {} is not 1-65535", ep.describe(), ep.port));
    if (auto literal = ipv4_literal(ep)) return {*literal};
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = AF_UNSPEC;
    std::string port = std::to_string(ep.port);

    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* numeric = nullptr;
    if (getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &numeric) == 0)
        return addresses_of(Addrinfo(numeric).get());

    hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
    auto state = std::make_shared<Resolution>();
    if (!state->done_fd) throw RedisUnavailable(fmt::format("eventfd: {}", std::strerror(errno)));
    std::thread([state, host = ep.host, port, hints] {
        addrinfo* res = nullptr;
        int status = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
        std::lock_guard lock(state->mutex);
        state->status = status;
        state->result.reset(res);
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(state->done_fd.get(), &one, sizeof one);
    }).detach();

    if (!poll_with_cancel(state->done_fd.get(), POLLIN, deadline, cancel_fd))
        throw RedisUnavailable(fmt::format("cannot resolve {}: timed out", ep.host));
    std::lock_guard lock(state->mutex);
    if (state->status != 0)
        throw RedisUnavailable(
            fmt::format("cannot resolve {}: {}", ep.host, gai_strerror(state->status)));
    return addresses_of(state->result.get());
}

// Polls `fd` for `events` and `cancel_fd` for input. Returns false on timeout.
bool poll_with_cancel(int fd, short events, Deadline deadline, int cancel_fd) {
    for (;;) {
        pollfd fds[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
        int n = ::poll(fds, cancel_fd >= 0 ? 2 : 1, millis_until(deadline));
        if (n < 0) {
            if (errno == EINTR) continue;
            throw RedisUnavailable(fmt::format("poll: {}", std::strerror(errno)));
        }
        if (cancel_fd >= 0 && (fds[1].revents & POLLIN)) throw Cancelled();
        if (n == 0) {
            if (BootClock::now() >= deadline) return false;
            continue;
        }
        return true;
    }
}

Fd start_connect(int family, const sockaddr* addr, socklen_t len, int& err) {
    Fd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
        err = errno;
        return fd;
    }
    if (::connect(fd.get(), addr, len) == 0 || errno == EINPROGRESS) {
        err = 0;
        return fd;
    }
    err = errno;
    return Fd();
}

// Completes a non-blocking connect; returns 0 or the errno it failed with.
int finish_connect(Fd& fd, Deadline deadline, int cancel_fd) {
    if (!poll_with_cancel(fd.get(), POLLOUT, deadline, cancel_fd)) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) return errno;
    return err;
}

RedisUnavailable connect_failure(const Endpoint& ep, int err) {
    return RedisUnavailable(
        fmt::format("cannot connect to Redis at {}: {}{}", ep.describe(),
                    err == ETIMEDOUT ? "connection timed out" : std::strerror(err),
                    ep.is_default ? " (the default, as no -u or REDLOCK_URL was given; set "
                                    "REDLOCK_URL=redis://HOST:PORT or pass -u URL)"
                                  : ""));
}

// A unix socket's address, and the start of its connect.
Fd start_unix_connect(const Endpoint& ep, int& err) {
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    if (ep.socket_path.size() >= sizeof sun.sun_path)
        throw RedisUnavailable(fmt::format("unix socket path too long: {}", ep.socket_path));
    std::memcpy(sun.sun_path, ep.socket_path.c_str(), ep.socket_path.size() + 1);
    return start_connect(AF_UNIX, reinterpret_cast<sockaddr*>(&sun), sizeof sun, err);
}

}  // namespace

Socket Socket::connect(const Endpoint& ep, Deadline deadline, int cancel_fd) {
    std::string peer = ep.describe();
    auto fail = [&](int err) { return connect_failure(ep, err); };
    if (ep.is_unix()) {
        int err = 0;
        Fd fd = start_unix_connect(ep, err);
        if (!fd) throw fail(err);
        if ((err = finish_connect(fd, deadline, cancel_fd)) != 0) throw fail(err);
        return Socket(std::move(fd), peer);
    }

    int last_err = ECONNREFUSED;
    for (const Address& address : resolve(ep, deadline, cancel_fd)) {
        int err = 0;
        Fd fd = start_connect(address.family(), address.get(), address.len, err);
        if (fd) err = finish_connect(fd, deadline, cancel_fd);
        if (err == 0) {
            int one = 1;
            setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            setsockopt(fd.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
            Socket socket(std::move(fd), peer);
            if (ep.tls)
                socket.start_tls(ep, deadline, cancel_fd);
            else
                socket.plain_tcp_ = true;
            return socket;
        }
        last_err = err;
        if (err == ETIMEDOUT) break;
    }
    throw fail(last_err);
}

bool Socket::connects_in_steps(const Endpoint& ep) {
    return ep.is_unix() || is_ip_literal(ep.host);
}

Socket Socket::begin_connect(const Endpoint& ep) {
    int err = 0;
    Fd fd;
    if (ep.is_unix()) {
        fd = start_unix_connect(ep, err);
    } else {
        // An IP literal: resolve() neither waits nor starts a thread for it.
        std::vector<Address> addresses = resolve(ep, Deadline::max(), -1);
        if (addresses.empty()) throw connect_failure(ep, EADDRNOTAVAIL);
        const Address& a = addresses.front();
        fd = start_connect(a.family(), a.get(), a.len, err);
    }
    if (!fd) throw connect_failure(ep, err);
    Socket socket(std::move(fd), ep.describe());
    socket.connecting_ = std::make_unique<Endpoint>(ep);
    return socket;
}

short Socket::events_of(TlsWant want) {
    return want == TlsWant::write ? POLLOUT : POLLIN;
}

void Socket::connected(const Endpoint& ep) {
    if (ep.is_unix()) return;
    int one = 1;
    setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd_.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    if (ep.tls)
        tls_ = std::make_unique<TlsStream>(TlsContext::get(*ep.tls), fd_.get(), ep.host, peer_);
    else
        plain_tcp_ = true;
}

short Socket::connect_step(Deadline deadline) {
    if (!connecting_) return 0;
    if (!tls_) {
        // The TCP connect: done when the socket is writable (then SO_ERROR says how it went).
        pollfd p{fd_.get(), POLLOUT, 0};
        int n = ::poll(&p, 1, 0);
        if (n < 0 && errno != EINTR)
            throw RedisUnavailable(fmt::format("poll: {}", std::strerror(errno)));
        if (n <= 0) {
            if (BootClock::now() >= deadline) throw connect_failure(*connecting_, ETIMEDOUT);
            return POLLOUT;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
        if (err != 0) throw connect_failure(*connecting_, err);
        connected(*connecting_);
    }
    if (tls_) {
        TlsWant want = tls_->handshake();
        if (want != TlsWant::nothing) {
            if (BootClock::now() >= deadline)
                throw RedisUnavailable(fmt::format(
                    "Redis at {} timed out while doing the TLS handshake (a plain-text Redis port "
                    "never answers one; is it a TLS port?)",
                    peer_));
            return events_of(want);
        }
    }
    connecting_.reset();
    return 0;
}

bool Socket::ready(short events, Deadline deadline, int cancel_fd) {
    return poll_with_cancel(fd_.get(), events, deadline, cancel_fd);
}

short Socket::write_step(std::string_view& data) {
    while (tls_ && !data.empty()) {
        TlsStream::Io io = tls_->write(data.data(), data.size());
        if (io.want != TlsWant::nothing) return events_of(io.want);
        data.remove_prefix(io.bytes);
    }
    while (!data.empty()) {
        ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(static_cast<std::size_t>(n));
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return POLLOUT;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            throw RedisUnavailable(plain_drop(fmt::format("lost the connection to Redis at {}: {}",
                                                          peer_, std::strerror(errno))));
        }
    }
    return 0;
}

std::size_t Socket::read_step(char* buf, std::size_t len, short& want) {
    want = 0;
    if (tls_) {
        TlsStream::Io io = tls_->read(buf, len);
        if (io.want == TlsWant::nothing) return io.bytes;
        want = events_of(io.want);
        return 0;
    }
    for (;;) {
        ssize_t n = ::recv(fd_.get(), buf, len, 0);
        if (n > 0) {
            received_ += static_cast<std::size_t>(n);
            return static_cast<std::size_t>(n);
        }
        if (n == 0)
            throw RedisUnavailable(
                plain_drop(fmt::format("Redis at {} closed the connection", peer_)));
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            throw RedisUnavailable(plain_drop(fmt::format("lost the connection to Redis at {}: {}",
                                                          peer_, std::strerror(errno))));
        want = POLLIN;
        return 0;
    }
}

void Socket::wait_for(short events, Deadline deadline, int cancel_fd, const char* doing) {
    if (!poll_with_cancel(fd_.get(), events, deadline, cancel_fd))
        throw RedisUnavailable(fmt::format("Redis at {} timed out while {}", peer_, doing));
}

void Socket::start_tls(const Endpoint& ep, Deadline deadline, int cancel_fd) {
    tls_ = std::make_unique<TlsStream>(TlsContext::get(*ep.tls), fd_.get(), ep.host, peer_);
    for (TlsWant want = tls_->handshake(); want != TlsWant::nothing; want = tls_->handshake())
        wait_for(want, deadline, cancel_fd,
                 "doing the TLS handshake (a plain-text Redis port never answers one; is it a TLS "
                 "port?)");
}

void Socket::wait_for(TlsWant want, Deadline deadline, int cancel_fd, const char* doing) {
    wait_for(want == TlsWant::write ? POLLOUT : POLLIN, deadline, cancel_fd, doing);
}

std::string Socket::plain_drop(const std::string& what) const {
    return !plain_tcp_ || received_ > 0 ? what
                                        : what + ", before any reply (a TLS port? use rediss://)";
}

void Socket::write_all(std::string_view data, Deadline deadline, int cancel_fd) {
    while (short want = write_step(data)) wait_for(want, deadline, cancel_fd, "sending a command");
}

std::size_t Socket::read_some(char* buf, std::size_t len, Deadline deadline, int cancel_fd) {
    // A read that runs out of time leaves the stream where it was (TLS included: the record
    // layer resumes where it stopped), so it is a ReplyTimedOut, which a caller may recover from.
    for (;;) {
        short want = 0;
        if (std::size_t n = read_step(buf, len, want)) return n;
        if (!poll_with_cancel(fd_.get(), want, deadline, cancel_fd))
            throw ReplyTimedOut(
                fmt::format("Redis at {} timed out while waiting for a reply", peer_));
    }
}

}  // namespace redlock
