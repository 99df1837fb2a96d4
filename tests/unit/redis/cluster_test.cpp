// ClusterRouter against three fake masters that answer only once all three have been asked: a
// router that visits the masters one after another waits out its command timeout on the first
// and fails, one that asks them all at once gets every answer. No wall-clock margin decides:
// the fakes wait up to 20 s, the router's timeout is 5 s, and the right router needs neither.
#include "redis/cluster.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../silent_server.hpp"
#include "redis/cluster_slots.hpp"
#include "redis/cluster_url.hpp"
#include "util/fd.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

// The slots of the three fake masters.
constexpr unsigned first_slot[3] = {0, 5461, 10923};
constexpr unsigned last_slot[3] = {5460, 10922, 16383};

// Three masters that share one barrier: a PING or GET is answered only when each of the three
// has received one (or after 20 s), CLUSTER SLOTS at once.
class FakeCluster {
  public:
    FakeCluster() {
        for (int i = 0; i < 3; ++i) threads_.emplace_back([this, i] { serve(i); });
    }
    ~FakeCluster() {
        for (auto& t : threads_) t.join();
    }
    int port(int i) const { return servers_[i].port; }

  private:
    std::string slot_map() const {
        std::string map = "*3\r\n";
        for (int i = 0; i < 3; ++i)
            map += "*3\r\n:" + std::to_string(first_slot[i]) +
                   "\r\n:" + std::to_string(last_slot[i]) +
                   "\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + std::to_string(servers_[i].port) + "\r\n";
        return map;
    }

    void arrive() {
        std::unique_lock lock(mutex_);
        ++arrived_;
        all_.notify_all();
        all_.wait_for(lock, std::chrono::seconds(20), [this] { return arrived_ >= 3; });
    }

    void serve(int i) {
        pollfd p{servers_[i].fd.get(), POLLIN, 0};
        if (::poll(&p, 1, 20000) <= 0) return;
        Fd conn(::accept4(servers_[i].fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) return;
        char buf[4096];
        for (;;) {
            pollfd c{conn.get(), POLLIN, 0};
            if (::poll(&c, 1, 20000) <= 0) return;
            ssize_t n = ::read(conn.get(), buf, sizeof buf);
            if (n <= 0) return;
            std::string_view got(buf, static_cast<std::size_t>(n));
            std::string reply;
            if (got.find("SLOTS") != std::string_view::npos) reply += slot_map();
            if (got.find("PING") != std::string_view::npos) {
                arrive();
                reply += "+PONG\r\n";
            }
            if (got.find("GET") != std::string_view::npos) {
                arrive();
                reply += "$-1\r\n";
            }
            if (!reply.empty() && ::write(conn.get(), reply.data(), reply.size()) < 0) return;
        }
    }

    redlock_test::SilentServer servers_[3];
    std::mutex mutex_;
    std::condition_variable all_;
    int arrived_ = 0;
    std::vector<std::thread> threads_;
};

// A key in master `i`'s slots.
std::string key_on(int i) {
    std::string key;
    for (int n = 0; n < 100000; ++n) {
        key = fmt::format("k{}", n);
        unsigned slot = hash_slot(key);
        if (slot >= first_slot[i] && slot <= last_slot[i]) break;
    }
    return key;
}

Endpoint cluster_of(const FakeCluster& fake) {
    return parse_cluster_url("redis-cluster://127.0.0.1:" + std::to_string(fake.port(0)));
}

}  // namespace

// list SCANs every master: all at once, so that three masters far away cost one round trip.
TEST(ClusterRouter, VisitsEveryMasterAtOnce) {
    FakeCluster fake;
    {
        Connection conn(cluster_of(fake), Timeouts{milliseconds(5000), milliseconds(5000)});
        std::mutex m;
        std::vector<std::string> pongs;
        EXPECT_NO_THROW(conn.cluster()->for_each_master([&](Connection& node, const NodeAddress&) {
            Reply r = node.command({"PING"});
            std::lock_guard hold(m);
            pongs.emplace_back(r->text());
        }));
        EXPECT_EQ(pongs, (std::vector<std::string>{"PONG", "PONG", "PONG"}));
    }
}

// A pipeline whose keys live on three masters (list reading the locks it found): one pipeline
// per master, all sent before any answer is awaited.
TEST(ClusterRouter, PipelinesToSeveralMastersGoOutAtOnce) {
    FakeCluster fake;
    {
        Connection conn(cluster_of(fake), Timeouts{milliseconds(5000), milliseconds(5000)});
        std::vector<Reply> replies;
        EXPECT_NO_THROW(
            replies = conn.pipeline({{"GET", key_on(0)}, {"GET", key_on(1)}, {"GET", key_on(2)}},
                                    BootClock::now() + milliseconds(5000)));
        ASSERT_EQ(replies.size(), 3u);
        for (const Reply& r : replies) EXPECT_TRUE(r->is_nil());
    }
}
