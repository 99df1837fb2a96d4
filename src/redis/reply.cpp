#include "redis/reply.hpp"

#include <hiredis/hiredis.h>

#include <fmt/format.h>

#include "util/number.hpp"

namespace redlock {

void Reply::Deleter::operator()(redisReply* r) const noexcept {
    freeReplyObject(r);
}

ReplyView::Type ReplyView::type() const noexcept {
    switch (r_->type) {
        case REDIS_REPLY_STRING:
            return Type::string;
        case REDIS_REPLY_ARRAY:
            return Type::array;
        case REDIS_REPLY_INTEGER:
            return Type::integer;
        case REDIS_REPLY_NIL:
            return Type::nil;
        case REDIS_REPLY_STATUS:
            return Type::status;
        case REDIS_REPLY_ERROR:
            return Type::error;
    }
    return Type::other;
}

std::string_view ReplyView::type_name() const noexcept {
    switch (type()) {
        case Type::string:
            return "a string";
        case Type::array:
            return "an array";
        case Type::integer:
            return "an integer";
        case Type::nil:
            return "nil";
        case Type::status:
            return "a status";
        case Type::error:
            return "an error";
        case Type::other:
            break;
    }
    return "an unknown type";
}

std::string_view ReplyView::text() const noexcept {
    return r_->str ? std::string_view(r_->str, r_->len) : std::string_view();
}

std::string_view ReplyView::error_text() const noexcept {
    return is_error() ? text() : std::string_view();
}

std::size_t ReplyView::size() const noexcept {
    return is_array() ? r_->elements : 0;
}

ReplyView ReplyView::operator[](std::size_t i) const {
    if (i >= size())
        throw UnexpectedReply(
            fmt::format("unexpected reply: no element {} in {} of {} (is this Redis?)", i + 1,
                        type_name(), size()));
    return ReplyView(*r_->element[i]);
}

std::optional<long long> ReplyView::integer(long long min, long long max) const noexcept {
    if (!is_integer() || r_->integer < min || r_->integer > max) return std::nullopt;
    return r_->integer;
}

std::optional<long long> ReplyView::number(long long min, long long max) const noexcept {
    if (is_integer()) return integer(min, max);
    if (is_string()) return parse_integer(text(), min, max);
    return std::nullopt;
}

std::optional<std::string_view> ReplyView::string() const noexcept {
    if (!is_string()) return std::nullopt;
    return text();
}

long long ReplyView::as_int(long long min, long long max, std::string_view what) const {
    return as_int(min, max, [&] { return what; });
}

long long ReplyView::as_number(long long min, long long max, std::string_view what) const {
    return as_number(min, max, [&] { return what; });
}

std::string_view ReplyView::as_string(std::string_view what) const {
    return as_string([&] { return what; });
}

ReplyView ReplyView::as_array(std::size_t min_elements, std::size_t max_elements,
                              std::string_view what) const {
    return as_array(min_elements, max_elements, [&] { return what; });
}

ReplyView check(ReplyView reply, std::string_view context) {
    if (!reply.is_error()) return reply;
    std::string_view text = reply.error_text();
    std::string_view code = text.substr(0, text.find(' '));
    std::string message = fmt::format("{}: {}", context, text);
    if (code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM") throw AuthError(message);
    // Before AUTH, Redis refuses commands with many arguments this way instead of with NOAUTH.
    if (text.find("Protocol error: unauthenticated") != std::string_view::npos)
        throw AuthError(
            fmt::format("{}: NOAUTH Redis requires a password ({}); give it with "
                        "REDISCLI_AUTH, --password-file or the URL",
                        context, text));
    if (code == "WRONGTYPE") throw DataError(message);
    // A redis:// URL that names one node of a Cluster works for the names whose slot that node
    // serves and fails with this for the others: say what it means. (In Cluster mode the router
    // follows MOVED before any reply reaches here.)
    if (code == "MOVED")
        throw RedisUnavailable(fmt::format(
            "{} (this Redis is a node of a Redis Cluster: use a redis-cluster://HOST:PORT URL)",
            message));
    // UNBLOCKED: a blocking command ended because the server changed role (a failover demoted
    // it), or by CLIENT UNBLOCK ... ERROR; the server is not the master to wait on any more.
    if (code == "READONLY" || code == "LOADING" || code == "MASTERDOWN" || code == "TRYAGAIN" ||
        code == "CLUSTERDOWN" || code == "BUSY" || code == "MOVED" || code == "ASK" ||
        code == "OOM" || code == "NOREPLICAS" || code == "UNBLOCKED")
        throw RedisUnavailable(message);
    // A server at its maxclients answers a new connection with this, and closes it: it cannot
    // serve us now (a herd at the top of the minute, say), the same as LOADING, not a fault of
    // the program (70); a waiter retries it.
    if (text.starts_with("ERR max number of clients reached")) throw RedisUnavailable(message);
    throw RedisError(message);
}

}  // namespace redlock
