#include "redis/script.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/sha1.hpp"

namespace redlock {
namespace {

// The oldest Redis whose commands every script has (LPOS came in 6.0.6).
constexpr int min_version[3] = {6, 0, 6};

// "5.0.14" from INFO server, or "" when the server does not say.
std::string server_version(Connection& conn, Deadline deadline) {
    try {
        Reply info = conn.command({"INFO", "server"}, deadline);
        std::optional<std::string_view> found = info->string();
        if (!found) return {};
        std::string_view text = *found;
        constexpr std::string_view field = "redis_version:";
        auto at = text.find(field);
        if (at == std::string_view::npos) return {};
        text.remove_prefix(at + field.size());
        return std::string(text.substr(0, text.find_first_of("\r\n")));
    } catch (const Error&) {
        return {};
    }
}

bool older_than_minimum(const std::string& version) {
    int parts[3] = {0, 0, 0};
    if (std::sscanf(version.c_str(), "%d.%d.%d", &parts[0], &parts[1], &parts[2]) < 2) return false;
    return std::lexicographical_compare(parts, parts + 3, min_version, min_version + 3);
}

// A script that calls a command the server does not know: on a Redis older than 6.0.6 that is
// LPOS, and the raw Lua error would say nothing about the fix. The version is read only now, on
// that error, so that no run pays a round trip for it.
void reject_old_server(Connection& conn, std::string_view name, std::string_view error,
                       Deadline deadline) {
    if (error.find("Unknown Redis command called from Lua script") == std::string_view::npos)
        return;
    std::string version = server_version(conn, deadline);
    if (!version.empty() && !older_than_minimum(version)) return;  // a renamed command, say
    throw UnsupportedServer(fmt::format(
        "Redis at {} is {}; redlock-run needs Redis 6.0.6 or later (the {} script uses LPOS)",
        conn.endpoint().describe(),
        version.empty() ? std::string("too old for the lock scripts") : "version " + version,
        name));
}

}  // namespace

Script::Script(std::string_view name, std::string_view body, std::string_view sha1, Send send)
    : name_(name), body_(body), sha1_(sha1), send_(send) {}

const Script& Script::for_setup(const Connection& conn) const {
    const int db = conn.connected() ? 0 : conn.endpoint().db;
    if (db == 0 || database_ != 0) return *this;
    static std::mutex lock;
    static std::map<std::pair<std::string, int>, std::unique_ptr<Script>> made;
    std::lock_guard<std::mutex> hold(lock);
    std::unique_ptr<Script>& variant = made[{sha1_, db}];
    if (!variant) {
        // On the script's first line, so that the line numbers in its errors stay as they are.
        std::string body = fmt::format("redis.call('SELECT', {}) ", db) + body_;
        std::string sha1 = sha1_hex(body);
        variant = std::make_unique<Script>(name_, body, sha1, send_);
        variant->database_ = db;
    }
    return *variant;
}

Reply Script::run(Connection& conn, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args, ScriptTime time,
                  const SetupGiveBack* give_back) const {
    if (give_back && &for_setup(conn) != this)
        return for_setup(conn).run(conn, keys, args, time, give_back);
    std::vector<std::string> argv{"EVALSHA", sha1_, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    Deadline deadline = time.first();
    // The first send only: after it the connection is open (a NOSCRIPT's EVAL follows on it).
    auto send = [&](const std::vector<std::string>& command, Deadline until) {
        return give_back ? conn.first_command(command, until, *give_back)
                         : conn.command(command, until);
    };
    // Send::body: one round trip whatever the cache holds (Send says why).
    if (send_ != Send::body && !conn.script_uncached(sha1_)) {
        Deadline sent = BootClock::now();
        Reply reply = send(argv, deadline);
        if (!error_text(*reply).starts_with("NOSCRIPT")) {
            conn.set_script_uncached(sha1_, false);  // it ran (Connection keeps count)
            reject_old_server(conn, name_, error_text(*reply), deadline);
            return reply;
        }
        // Remembered before anything else can fail: the caller's retry (or the renewer's next
        // renewal) sends the body at once, so it is one round trip, not the same two again.
        conn.set_script_uncached(sha1_, true);
        Deadline answered = BootClock::now();
        if (auto own = time.then(answered)) {
            deadline = *own;
        } else if (deadline - answered < answered - sent) {
            // One deadline for both: the EVAL will take about as long as the EVALSHA did. With
            // less than that left it would most likely time out after Redis ran it, an outcome
            // the caller cannot know (ReplyLost): failing now, with nothing sent, is the
            // cleaner error.
            throw RedisUnavailable(fmt::format(
                "{} script not cached on {} and too little time left to send it (the EVALSHA "
                "took {}, {} left); the next try sends it at once",
                name_, conn.endpoint().describe(),
                format_duration(std::chrono::ceil<Millis>(answered - sent)),
                format_duration(std::chrono::floor<Millis>(
                    std::max(deadline - answered, BootClock::duration(0))))));
        }
    }
    // Not reported, even with -v: which of EVALSHA and EVAL carried a script is the client's
    // business, and -v reports what the lock did (issue 34).
    argv[0] = "EVAL";
    argv[1] = body_;
    Reply reply = conn.connected() ? conn.command(argv, deadline) : send(argv, deadline);
    conn.set_script_uncached(sha1_, false);  // answered: the server has it now
    reject_old_server(conn, name_, error_text(*reply), deadline);
    return reply;
}

std::vector<std::string> Script::argv(const std::vector<std::string>& keys,
                                      const std::vector<std::string>& args, bool body) const {
    std::vector<std::string> out{body ? "EVAL" : "EVALSHA", body ? body_ : sha1_,
                                 std::to_string(keys.size())};
    out.insert(out.end(), keys.begin(), keys.end());
    out.insert(out.end(), args.begin(), args.end());
    return out;
}

void Script::note_reply(Connection& conn, const Reply& reply, Deadline deadline) const {
    conn.set_script_uncached(sha1_, error_text(*reply).starts_with("NOSCRIPT"));
    reject_old_server(conn, name_, error_text(*reply), deadline);
}

ScriptSend::ScriptSend(Connection& conn, ScriptCall call, Millis per_send,
                       const SetupGiveBack* give_back)
    : conn_(conn), call_(std::move(call)), per_send_(per_send), body_(false) {
    if (give_back) call_.script = &call_.script->for_setup(conn);
    body_ = call_.script->sends_body(conn);
    conn_.send(call_.script->argv(call_.keys, call_.args, body_), BootClock::now() + per_send_,
               give_back);
}

std::optional<Reply> ScriptSend::judge(Reply reply) {
    if (!body_ && error_text(*reply).starts_with("NOSCRIPT")) {
        // As in run(): remembered first; the body follows on the same connection.
        conn_.set_script_uncached(call_.script->sha1(), true);
        body_ = true;
        conn_.send(call_.script->argv(call_.keys, call_.args, true), BootClock::now() + per_send_);
        return std::nullopt;
    }
    call_.script->note_reply(conn_, reply, BootClock::now() + per_send_);
    return reply;
}

std::optional<Reply> ScriptSend::step() {
    while (std::optional<Reply> reply = conn_.receive())
        if (std::optional<Reply> judged = judge(std::move(*reply))) return judged;
    return std::nullopt;
}

Reply ScriptSend::finish() {
    for (;;)
        if (std::optional<Reply> judged = judge(conn_.finish())) return std::move(*judged);
}

std::vector<Reply> run_read_only(Connection& conn, const std::vector<ReadCall>& calls,
                                 Deadline deadline) {
    std::vector<std::vector<std::string>> commands;
    commands.reserve(calls.size());
    for (const ReadCall& call : calls)
        commands.push_back(
            call.script
                ? call.script->argv(call.keys, call.args, conn.script_uncached(call.script->sha1()))
                : call.args);
    std::vector<Reply> replies = conn.read_only_pipeline(commands, deadline);
    // In order, as Script::run would have met them: a NOSCRIPT for the first script of a
    // connection marks the whole cache as emptied (Connection::script_uncached).
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        if (!calls[i].script) continue;
        if (commands[i][0] == "EVALSHA" && error_text(*replies[i]).starts_with("NOSCRIPT")) {
            conn.set_script_uncached(calls[i].script->sha1(), true);
            missing.push_back(i);
            continue;
        }
        calls[i].script->note_reply(conn, replies[i], deadline);
    }
    if (missing.empty()) return replies;
    std::vector<std::vector<std::string>> again;
    for (std::size_t i : missing)
        again.push_back(calls[i].script->argv(calls[i].keys, calls[i].args, true));
    std::vector<Reply> resent = conn.pipeline(again, deadline);
    for (std::size_t j = 0; j < missing.size(); ++j) {
        std::size_t i = missing[j];
        replies[i] = std::move(resent[j]);
        calls[i].script->note_reply(conn, replies[i], deadline);
    }
    return replies;
}

}  // namespace redlock
