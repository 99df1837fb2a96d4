// A Redis reply as the layers above redis/ see it: an owner of hiredis's reply tree (RAII), read
// through checked accessors. hiredis's structs stay inside src/redis/, so every number a server
// sends is range-checked by the accessor that reads it, and a reply of the wrong shape is one
// exception type (UnexpectedReply) with the decoder's own words.
#pragma once

#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "util/errors.hpp"

struct redisReply;  // hiredis: complete only inside src/redis/

namespace redlock {

// One node of a reply tree (the reply, or an element of an array in it), owned by a Reply that
// must outlive it.
class ReplyView {
  public:
    enum class Type { string, array, integer, nil, status, error, other };

    explicit ReplyView(const redisReply& r) noexcept : r_(&r) {}

    Type type() const noexcept;
    bool is_string() const noexcept { return type() == Type::string; }
    bool is_array() const noexcept { return type() == Type::array; }
    bool is_integer() const noexcept { return type() == Type::integer; }
    bool is_nil() const noexcept { return type() == Type::nil; }
    bool is_status() const noexcept { return type() == Type::status; }
    bool is_error() const noexcept { return type() == Type::error; }
    // The type in words for messages ("an integer", "nil"): "type 4" tells an operator nothing.
    std::string_view type_name() const noexcept;

    // The bytes of a string, status or error reply; "" for any other.
    std::string_view text() const noexcept;
    // The text of an error reply; "" for any other.
    std::string_view error_text() const noexcept;
    // The elements of an array; 0 for any other reply.
    std::size_t size() const noexcept;
    // Element `i`; UnexpectedReply when there is no such element (a caller that checked size()
    // never meets it).
    ReplyView operator[](std::size_t i) const;

    // Unchecked type, checked value: nullopt for a reply of another type or a value outside
    // [min, max], so that no caller does arithmetic on a wild number.
    // An integer reply.
    std::optional<long long> integer(long long min, long long max) const noexcept;
    // An integer reply, or a string reply of a decimal integer (parse_integer: a Lua script
    // returns numbers past 2^53 as strings to keep them exact).
    std::optional<long long> number(long long min, long long max) const noexcept;
    // A string reply's bytes.
    std::optional<std::string_view> string() const noexcept;

    // Checked: each returns what was asked for, or throws UnexpectedReply whose message is
    // `what` (or what `what()` returns: a callable is only called on failure, so a decoder's
    // success path formats nothing).
    long long as_int(long long min, long long max, std::string_view what) const;
    long long as_number(long long min, long long max, std::string_view what) const;
    std::string_view as_string(std::string_view what) const;
    // An array of min_elements..max_elements elements.
    ReplyView as_array(std::size_t min_elements, std::size_t max_elements,
                       std::string_view what) const;
    template <std::invocable F>
    long long as_int(long long min, long long max, F&& what) const {
        if (auto v = integer(min, max)) return *v;
        throw UnexpectedReply(std::string(what()));
    }
    template <std::invocable F>
    long long as_number(long long min, long long max, F&& what) const {
        if (auto v = number(min, max)) return *v;
        throw UnexpectedReply(std::string(what()));
    }
    template <std::invocable F>
    std::string_view as_string(F&& what) const {
        if (auto s = string()) return *s;
        throw UnexpectedReply(std::string(what()));
    }
    template <std::invocable F>
    ReplyView as_array(std::size_t min_elements, std::size_t max_elements, F&& what) const {
        if (is_array() && size() >= min_elements && size() <= max_elements) return *this;
        throw UnexpectedReply(std::string(what()));
    }

    // hiredis's own struct, for the code inside src/redis/ that decodes replies of its own
    // (CLUSTER SLOTS, SENTINEL, ROLE). Nothing above redis/ can read it: they do not see its
    // definition.
    const redisReply& raw() const noexcept { return *r_; }

  private:
    const redisReply* r_;
};

// The owner of one reply tree, as Connection hands it out. Read it through `->` or `*`.
class Reply {
  public:
    Reply() noexcept = default;
    // Takes ownership of a reply that hiredis's reader made.
    explicit Reply(redisReply* owned) noexcept : reply_(owned) {}

    explicit operator bool() const noexcept { return reply_ != nullptr; }
    ReplyView operator*() const noexcept { return ReplyView(*reply_); }
    // `reply->is_nil()`: the view is made on the spot and lives for the full expression.
    struct Arrow {
        ReplyView view;
        const ReplyView* operator->() const noexcept { return &view; }
    };
    Arrow operator->() const noexcept { return {ReplyView(*reply_)}; }

  private:
    struct Deleter {
        void operator()(redisReply* r) const noexcept;
    };
    std::unique_ptr<redisReply, Deleter> reply_;
};

// Throws the exception that matches an error reply (AuthError for NOAUTH/WRONGPASS/NOPERM,
// RedisUnavailable for READONLY/LOADING/MASTERDOWN/..., DataError for WRONGTYPE, RedisError
// otherwise); `context` says what we were doing. Returns the reply when it is not an error.
ReplyView check(ReplyView reply, std::string_view context);
inline ReplyView check(const Reply& reply, std::string_view context) {
    return check(*reply, context);
}

// The error text of an error reply, or "" for any other reply.
inline std::string_view error_text(ReplyView r) noexcept {
    return r.error_text();
}

}  // namespace redlock
