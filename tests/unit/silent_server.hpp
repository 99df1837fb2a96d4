// A loopback TCP socket that listens (the kernel completes connections) but never reads or
// answers unless a test accepts on `fd`: the peer for deadline and cancel tests.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

}  // namespace redlock_test
