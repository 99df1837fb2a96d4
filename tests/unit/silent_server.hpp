// A loopback TCP socket that listens (the kernel completes connections) but never reads or
// answers unless a test accepts on `fd`: the peer for deadline and cancel tests.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>

#include "util/fd.hpp"

namespace redlock_test {

struct SilentServer {
    redlock::Fd fd;
    int port = 0;
    SilentServer() : fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len), 0);
        EXPECT_EQ(::listen(fd.get(), 8), 0);
        EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
        port = ntohs(addr.sin_port);
    }
};

// A fake server's read of what the client sends before any answer: until `marker` has come or
// 10 s have passed (a client that waits for an answer between commands never sends it). False
// when the client hung up.
inline bool read_until(const redlock::Fd& conn, std::string& got, std::string_view marker) {
    char buf[4096];
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got.find(marker) == std::string::npos && std::chrono::steady_clock::now() < until) {
        pollfd p{conn.get(), POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        ssize_t n = ::read(conn.get(), buf, sizeof buf);
        if (n <= 0) return false;
        got.append(buf, static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace redlock_test
