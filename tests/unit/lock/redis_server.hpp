// A throwaway redis-server for the unit tests of the lock layer (skipped when none is installed):
// started once per test suite on a free loopback port, flushed before every test, stopped by PID.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "redis/connection.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"

namespace redlock::unit {

// A loopback port nothing listens on right now (the kernel's pick, released again).
inline int free_port() {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        return 0;
    return ntohs(addr.sin_port);
}

class RedisServerTest : public ::testing::Test {
  protected:
    static inline int port = 0;
    static inline pid_t pid = 0;
    static inline std::string dir;

    static void SetUpTestSuite() {
        if (std::system("command -v redis-server >/dev/null 2>&1") != 0) return;
        char tmpl[] = "/tmp/redlock-lock-test.XXXXXX";
        dir = mkdtemp(tmpl);
        for (int attempt = 0; attempt < 5 && !pid; ++attempt) {
            port = free_port();
            std::string cmd = "redis-server --port " + std::to_string(port) +
                              " --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir " +
                              dir + " --pidfile " + dir + "/pid --logfile " + dir + "/log";
            if (std::system(cmd.c_str()) != 0) continue;
            for (int i = 0; i < 250 && !pid; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                std::ifstream in(dir + "/pid");
                pid_t p = 0;
                if (in >> p && p > 0 && ping()) pid = p;
            }
        }
    }

    static void TearDownTestSuite() {
        if (pid > 0) ::kill(pid, SIGTERM);
        pid = 0;
        if (!dir.empty()) std::system(("rm -rf " + dir).c_str());
    }

    static bool ping() {
        try {
            Connection c(endpoint(),
                         Timeouts{std::chrono::milliseconds(500), std::chrono::milliseconds(500)});
            Reply r = c.command({"PING"});
            return r->is_status();
        } catch (const Error&) {
            return false;
        }
    }

    static Endpoint endpoint() {
        Endpoint ep;
        ep.host = "127.0.0.1";
        ep.port = port;
        return ep;
    }

    void SetUp() override {
        if (!pid) GTEST_SKIP() << "redis-server is not available";
        raw("FLUSHALL");
    }

    std::string raw(std::initializer_list<std::string> argv) {
        Reply r = conn.command(std::vector<std::string>(argv));
        if (r->is_string() || r->is_status() || r->is_error()) return std::string(r->text());
        if (auto n = r->integer(LLONG_MIN, LLONG_MAX)) return std::to_string(*n);
        return "";
    }
    std::string raw(const char* one) { return raw({std::string(one)}); }

    Deadline soon() { return BootClock::now() + std::chrono::milliseconds(2000); }

    Connection conn{endpoint(), Timeouts{}};
};

}  // namespace redlock::unit
