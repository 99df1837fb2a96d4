#include "redis/cluster_slots.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "util/errors.hpp"
#include "util/iequals.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

std::uint16_t crc16(std::string_view data) {
    std::uint16_t crc = 0;
    for (unsigned char byte : data) {
        crc ^= static_cast<std::uint16_t>(byte << 8);
        for (int i = 0; i < 8; ++i)
            crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                 : static_cast<std::uint16_t>(crc << 1);
    }
    return crc;
}

}  // namespace

std::string_view hashed_part(std::string_view key) {
    auto open = key.find('{');
    if (open == std::string_view::npos) return key;
    auto close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1) return key;
    return key.substr(open + 1, close - open - 1);
}

unsigned hash_slot(std::string_view key) {
    return crc16(hashed_part(key)) % 16384;
}

std::string NodeAddress::describe() const {
    if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
    return fmt::format("{}:{}", host, port);
}

std::vector<SlotRange> parse_cluster_slots(const redisReply& reply, std::string_view asked_host) {
    // A protocol error (69) like the reader's own: the node answered nothing a cluster node
    // would, and the next seed may still know the map (ClusterRouter::refresh goes on to it).
    auto malformed = [](std::string_view why) {
        return RedisUnavailable(
            fmt::format("protocol error: unexpected reply to CLUSTER SLOTS: {}", why));
    };
    if (reply.type != REDIS_REPLY_ARRAY) throw malformed("not an array");
    // A real cluster has at most one range per slot. More would overflow the router's 16-bit
    // master index and cost time for nothing.
    if (reply.elements > cluster_slots)
        throw malformed(fmt::format("{} slot ranges, more than the {} slots a cluster has",
                                    reply.elements, cluster_slots));
    std::vector<SlotRange> ranges;
    for (std::size_t i = 0; i < reply.elements; ++i) {
        const redisReply& entry = *reply.element[i];
        if (entry.type != REDIS_REPLY_ARRAY || entry.elements < 3 ||
            entry.element[0]->type != REDIS_REPLY_INTEGER ||
            entry.element[1]->type != REDIS_REPLY_INTEGER ||
            entry.element[2]->type != REDIS_REPLY_ARRAY || entry.element[2]->elements < 2)
            throw malformed("an entry is not [first, last, [host, port, ...], ...]");
        const redisReply& master = *entry.element[2];
        SlotRange range;
        long long first = entry.element[0]->integer, last = entry.element[1]->integer;
        if (first < 0 || last < first || last >= cluster_slots)
            throw malformed(fmt::format("slot range {}-{}", first, last));
        range.first = static_cast<unsigned>(first);
        range.last = static_cast<unsigned>(last);
        if (master.element[0]->type == REDIS_REPLY_STRING)
            range.master.host.assign(master.element[0]->str, master.element[0]->len);
        if (range.master.host.empty() || range.master.host == "?")
            range.master.host = std::string(asked_host);
        if (master.element[1]->type != REDIS_REPLY_INTEGER || master.element[1]->integer <= 0 ||
            master.element[1]->integer > 65535)
            throw malformed("a node's port is not 1-65535");
        range.master.port = static_cast<int>(master.element[1]->integer);
        ranges.push_back(std::move(range));
    }
    return ranges;
}

std::optional<Redirect> parse_redirect(std::string_view error) {
    Redirect r;
    if (error.starts_with("MOVED "))
        r.kind = Redirect::Kind::moved;
    else if (error.starts_with("ASK "))
        r.kind = Redirect::Kind::ask;
    else
        return std::nullopt;
    std::string_view rest = error.substr(error.find(' ') + 1);
    auto space = rest.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    auto slot = parse_integer(rest.substr(0, space), 0, cluster_slots - 1);
    std::string_view address = rest.substr(space + 1);
    // The host may be an IPv6 address with colons of its own: the port follows the last one.
    auto colon = address.rfind(':');
    if (!slot || colon == std::string_view::npos) return std::nullopt;
    auto port = parse_integer(address.substr(colon + 1), 1, 65535);
    if (!port) return std::nullopt;
    r.slot = static_cast<unsigned>(*slot);
    r.to.host = std::string(address.substr(0, colon));
    r.to.port = static_cast<int>(*port);
    // Redis leaves the host empty when the node does not know its address; the caller then
    // keeps the host it already talks to.
    return r;
}

std::optional<std::string_view> routing_key(const std::vector<std::string>& argv) {
    if (argv.size() < 2) return std::nullopt;
    const std::string& name = argv[0];
    if (iequals(name, "EVAL") || iequals(name, "EVALSHA") || iequals(name, "EVAL_RO") ||
        iequals(name, "EVALSHA_RO") || iequals(name, "FCALL") || iequals(name, "FCALL_RO")) {
        auto numkeys = argv.size() > 2 ? parse_integer(argv[2], 1, LLONG_MAX) : std::nullopt;
        if (!numkeys || argv.size() < 4) return std::nullopt;
        return argv[3];
    }
    for (std::string_view keyless : {"SCAN", "PING", "INFO", "CLUSTER", "SCRIPT", "TIME", "AUTH",
                                     "SELECT", "HELLO", "CLIENT", "ACL", "CONFIG", "ASKING"})
        if (iequals(name, keyless)) return std::nullopt;
    return argv[1];
}

}  // namespace redlock
