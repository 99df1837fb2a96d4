// The permits protocol against one node (PermitsMode, a LockNode with permits > 1) and the
// operator's reads of a permits lock. Every step is one call of permits.lua, which does it
// atomically.
#include "lock/node/permits.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "lock/node/lock_replies.hpp"
#include "lock/node/scripted_mode.hpp"
#include "lock/node/scripts.hpp"
#include "util/errors.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

constexpr std::string_view record_prefix = "redlock-permits/";
constexpr std::string_view mismatch_prefix = "PERMITS ";

// An integer reply's value, `otherwise` for any other reply; each caller clamps it to its range.
long long integer_or(ReplyView r, long long otherwise) {
    return r.integer(LLONG_MIN, LLONG_MAX).value_or(otherwise);
}

// Runs one operation of permits.lua; KEYS and the first ARGV are the same for all of them (the
// ledger's keys and the set of open runs too: an acquire may record an abandoned run).
Reply run_permits(Connection& conn, const LockKeys& keys, std::string_view op,
                  std::vector<std::string> args, ScriptTime time,
                  const SetupGiveBack* give_back = nullptr) {
    std::vector<std::string> argv{std::string(op), permit_key_prefix(keys), keys.wake,
                                  std::to_string(wake_linger.count())};
    argv.insert(argv.end(), std::make_move_iterator(args.begin()),
                std::make_move_iterator(args.end()));
    std::vector<std::string> script_keys{keys.key,    keys.fence, keys.wait,
                                         keys.ledger, keys.once,  keys.open};
    return scripts::permits().run(conn, script_keys, argv, time, give_back);
}

// {permit, token, pttl, {info...}} as the status and force operations of permits.lua and
// shared.lua return each holder (shared.lua's permit is 0).
std::vector<PermitHolder> holders_from(ReplyView r, std::size_t first, long long redis_now_ms,
                                       std::string_view what) {
    auto bad = [&] {
        return fmt::format("unexpected reply from the {} script (is this Redis?)", what);
    };
    std::vector<PermitHolder> holders;
    for (std::size_t i = first; i < r.size(); ++i) {
        ReplyView h = r[i].as_array(4, SIZE_MAX, bad);
        PermitHolder p;
        p.token = h[1].as_string(bad);
        p.permit = static_cast<int>(std::clamp<long long>(integer_or(h[0], 0), 0, max_permits));
        p.pttl_ms = std::clamp<long long>(integer_or(h[2], -2), -2, max_server_ttl.count());
        p.holder = holder_from_reply(h[3], 0);
        if (p.holder && p.holder->token != p.token) p.holder.reset();
        if (p.holder) p.holder->now_ms = redis_now_ms;
        holders.push_back(std::move(p));
    }
    return holders;
}

}  // namespace

std::string permits_record(int permits) {
    return fmt::format("{}{}", record_prefix, permits);
}

std::optional<int> permits_of(std::string_view value) {
    if (!value.starts_with(record_prefix)) return std::nullopt;
    std::optional<long long> n = parse_integer(value.substr(record_prefix.size()), 1, max_permits);
    if (!n) return std::nullopt;
    return static_cast<int>(*n);
}

std::string permit_key_prefix(const LockKeys& keys) {
    // companion_key(key, "permit:" + i) == companion_key(key, "permit:") + i for every key
    // shape (see LockKeys::make on the wake-up lists), so the script can name permit i.
    return companion_key(keys.key, "permit:");
}

void throw_if_permits_mismatch(const Reply& reply, const LockKeys& keys) {
    std::string_view error = error_text(*reply);
    if (error.starts_with(mismatch_prefix))
        throw UsageError(
            fmt::format("lock '{}' {}", keys.key, error.substr(mismatch_prefix.size())));
}

namespace {

class PermitsMode final : public ScriptedMode {
  public:
    explicit PermitsMode(int permits) : permits_(permits) {}

    AcquireResult acquire(Connection& conn, const NodeSettings& settings, const LockKeys& keys,
                          const std::string& token, Millis ttl, const HolderInfo* info,
                          Queueing queueing, long long ticket,
                          const SetupGiveBack* give_back) override {
        const int wanted = settings.wanted_permit;
        std::vector<std::string> args{token,
                                      std::to_string(ttl.count()),
                                      queue_arg(settings, queueing, ticket),
                                      std::to_string(alive_grace(conn).count()),
                                      std::to_string(no_ttl_recheck.count()),
                                      std::to_string(permits_),
                                      settings.restart_guard_arg(ttl),
                                      wanted > 0 ? std::to_string(wanted) : ""};
        Reply reply = acquire_op(conn, keys, std::move(args), info, give_back);
        throw_if_permits_mismatch(reply, keys);
        AcquireResult result = acquire_result(reply, keys.key);
        if (!result.acquired) return result;
        ReplyView r = *reply;
        long long permit = r.size() >= 4 ? integer_or(r[3], 0) : 0;
        if (permit < 1 || permit > permits_)
            throw UnexpectedReply(fmt::format(
                "unexpected reply from the permits script: permit {} of {} for lock '{}'", permit,
                permits_, keys.key));
        result.permit = permit_ = static_cast<int>(permit);
        result.holder.reset();  // the reply's tail is the permit number, not holder info
        // 'free' (a new acquire; a re-sent one says 'counter' instead): one '0' or '1' per permit.
        if (r.size() >= 6 && r[4].text() == "free") {
            std::string_view map = r[5].text();
            if (map.size() != static_cast<std::size_t>(permits_) ||
                map.find_first_not_of("01") != std::string_view::npos)
                throw UnexpectedReply(fmt::format(
                    "unexpected reply from the permits script: a map of free permits of {} "
                    "characters for --permits {} of lock '{}'",
                    map.size(), permits_, keys.key));
            for (char c : map) result.free_permits.push_back(c == '1');
        }
        return result;
    }

    RenewResult renew(Connection& conn, const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline) override {
        conn.ensure_connected(deadline);
        Reply reply =
            run_permits(conn, keys, "renew",
                        {token, std::to_string(ttl.count()), std::to_string(permit_)}, deadline);
        return renew_result(reply, keys.key);
    }

    ReleaseResult release(Connection& conn, const LockKeys& keys, const std::string& token,
                          Millis keep) override {
        Reply reply = run_permits(conn, keys, "release",
                                  {token, std::to_string(keep.count()), acquired_permit_arg()},
                                  conn.timeouts().command);
        return release_result(reply, keys.key);
    }

    FinishResult finish(Connection& conn, const LockKeys& keys, const std::string& token,
                        Millis keep, const RunRecord& record) override {
        return finish_op(conn, keys, {token, std::to_string(keep.count()), acquired_permit_arg()},
                         record);
    }

    void settle_permit(Connection& conn, const LockKeys& keys, const std::string& token,
                       int permit) override {
        permit_ = permit;
        abandon_op(conn, keys, token, fmt::format("keep:{}", permit), Millis(0));
    }

    void handed_over(int permit) override { permit_ = permit; }

    HeldKeys held_keys(const LockKeys& keys, const std::string&, int permit) const override {
        std::string key = permit_key_prefix(keys) + std::to_string(permit);
        return {key, key + ":info"};
    }

    int permits() const override { return permits_; }
    bool shared() const override { return false; }

  private:
    Reply run_op(Connection& conn, const LockKeys& keys, std::string_view op,
                 std::vector<std::string> args, ScriptTime time,
                 const SetupGiveBack* give_back) const override {
        return run_permits(conn, keys, op, std::move(args), time, give_back);
    }

    // The release and finish steps name the permit taken; "" lets the script look it up (a
    // release --token that never acquired).
    std::string acquired_permit_arg() const { return permit_ > 0 ? std::to_string(permit_) : ""; }

    int permits_;
    int permit_ = 0;  // the one acquired (0: none yet; release --token looks it up)
};

}  // namespace

std::unique_ptr<LockMode> make_permits_mode(int permits) {
    return std::make_unique<PermitsMode>(permits);
}

bool permits_hold(Connection& conn, const LockKeys& keys, const std::string& token) {
    Reply reply = run_permits(conn, keys, "holds", {token}, conn.timeouts().command);
    ReplyView r = check(reply, fmt::format("checking the inherited lock '{}'", keys.key));
    return r.integer(1, 1).has_value();
}

PermitsState holders_status(const Reply& reply, const LockKeys& keys, std::string_view what) {
    ReplyView r =
        check(reply, fmt::format("reading the holders of lock '{}'", keys.key))
            .as_array(4, SIZE_MAX, [&] {
                return fmt::format("unexpected reply from the {} script (is this Redis?)", what);
            });
    PermitsState s;
    s.permits = static_cast<int>(std::clamp<long long>(integer_or(r[0], 0), 0, 1 << 30));
    if (r[1].is_string())
        if (auto fence = parse_integer(r[1].text(), 0, fence_limit - 1)) s.fence = *fence;
    // TIME's seconds and microseconds, clamped as they always were.
    long long seconds =
        std::clamp<long long>(r[2].number(LLONG_MIN, LLONG_MAX).value_or(0), 0, max_unix_seconds);
    long long micros =
        std::clamp<long long>(r[3].number(LLONG_MIN, LLONG_MAX).value_or(0), 0, 999'999);
    s.redis_now_ms = seconds * 1000 + micros / 1000;
    s.holders = holders_from(r, 4, s.redis_now_ms, what);
    return s;
}

std::vector<PermitHolder> removed_holders(const Reply& reply, const LockKeys& keys,
                                          std::string_view what) {
    ReplyView r =
        check(reply, fmt::format("force-releasing the holders of lock '{}'", keys.key))
            .as_array(0, SIZE_MAX, [&] {
                return fmt::format("unexpected reply from the {} script (is this Redis?)", what);
            });
    return holders_from(r, 0, 0, what);
}

PermitsState read_permits(Connection& conn, const LockKeys& keys) {
    return holders_status(run_permits(conn, keys, "status", {}, conn.timeouts().command), keys,
                          "permits");
}

std::vector<PermitHolder> force_release_permits(Connection& conn, const LockKeys& keys) {
    return removed_holders(run_permits(conn, keys, "force", {}, conn.timeouts().command), keys,
                           "permits");
}

bool is_permit_companion(std::string_view key) {
    // A shared lock's holders set, or a holder's record: the "shared:" companion + a token.
    if (lock_key_of(key, "shared")) return true;
    constexpr std::size_t token_len = 32;
    if (key.size() > token_len &&
        key.substr(key.size() - token_len).find_first_not_of("0123456789abcdef") ==
            std::string_view::npos &&
        lock_key_of(key.substr(0, key.size() - token_len), "shared:"))
        return true;
    // A permit key, or its holder info or drawn fence (permits.lua): "permit:" + i [+ ":info" or
    // ":fence"].
    std::string_view base = key, tail;
    for (std::string_view t : {":info", ":fence"}) {
        if (base.ends_with(t)) {
            base.remove_suffix(t.size());
            tail = t;
            break;
        }
    }
    std::size_t digits = base.size();
    while (digits > 0 && base[digits - 1] >= '0' && base[digits - 1] <= '9') --digits;
    if (digits == base.size()) return false;
    std::string suffix = fmt::format("permit:{}{}", base.substr(digits), tail);
    return lock_key_of(key, suffix).has_value();
}

}  // namespace redlock
