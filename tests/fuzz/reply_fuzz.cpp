// libFuzzer target: any bytes from a "server", fed to the hiredis reader in chunks as
// Connection::read_reply does, with its bounded reader, (the first byte picks the chunk size, as
// partial reads would cut them), and every reply that comes out through our reading of it: check(),
// the acquire, renew, release, status and waiters script replies, holder info, the status text and
// JSON made from them, a CLUSTER SLOTS reply and a MOVED / ASK redirection. Anything but a result
// or an Error exception is a bug.
#include <hiredis/hiredis.h>

#include <cstdint>
#include <memory>

#include "inspect/lock_report.hpp"
#include "lock/ledger/ledger.hpp"
#include "lock/node/holder.hpp"
#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/waiters.hpp"
#include "redis/cluster_slots.hpp"
#include "redis/connection.hpp"
#include "redis/reply_reader.hpp"
#include "util/errors.hpp"
#include "util/json.hpp"

using namespace redlock;

namespace {

struct ReaderDeleter {
    void operator()(redisReader* r) const { redisReaderFree(r); }
};

template <typename F>
void tolerate_errors(F&& f) {
    try {
        f();
    } catch (const Error&) {
    }
}

void interpret(const Reply& reply) {
    (void)error_text(*reply);
    tolerate_errors([&] { check(reply, "fuzzing"); });
    tolerate_errors([&] {
        AcquireResult a = acquire_result(reply, "job");
        if (!a.acquired) (void)describe_holder(a);
        // --once-per: a slot is taken only in its policy's range (LockNode::acquire), and its
        // start is then computed without overflow, whatever the period.
        for (Millis period : {once_period_min, Millis(3'600'000), once_period_max}) {
            OncePer p;
            p.period = period;
            p.offset = Millis(period / 2);
            if (a.slot && slot_in_range(*a.slot, p)) (void)slot_start_ms(*a.slot, p);
        }
    });
    tolerate_errors([&] { (void)renew_result(reply, "job"); });
    tolerate_errors([&] { (void)release_result(reply, "job"); });
    tolerate_errors([&] {
        LockState s = lock_state_from_reply(LockKeys::make("job", "p:"), reply);
        JsonWriter json;
        write_lock_json(json, s);
        (void)holder_text(s);
        (void)held_for_text(s);
        (void)ttl_text(s);
    });
    tolerate_errors([&] {
        Waiters w = waiters_from_reply(reply, "job");
        JsonWriter json;
        json.begin_object();
        write_waiters_json(json, w);
        json.end_object();
        (void)waiters_text(w, "n1:1");
    });
    for (std::size_t first = 0; first < 3; ++first) (void)holder_from_reply(*reply, first);
    tolerate_errors([&] { (void)parse_cluster_slots(reply->raw(), "127.0.0.1"); });
    (void)parse_redirect(error_text(*reply));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    std::size_t chunk = data[0] % 32 + 1;
    const char* bytes = reinterpret_cast<const char*>(data + 1);
    std::size_t left = size - 1;
    std::unique_ptr<redisReader, ReaderDeleter> reader(new_reply_reader());
    for (;;) {
        void* out = nullptr;
        if (redisReaderGetReply(reader.get(), &out) != REDIS_OK) break;  // a protocol error
        if (out) {
            interpret(Reply(static_cast<redisReply*>(out)));
            continue;
        }
        if (left == 0) break;
        std::size_t n = std::min(chunk, left);
        if (feed_reader(*reader, bytes, n) != REDIS_OK) break;
        bytes += n;
        left -= n;
    }
    return 0;
}
