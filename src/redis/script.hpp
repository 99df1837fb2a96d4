// A Lua script sent by EVALSHA, falling back to EVAL when the server's script cache lacks it
// (after a restart, a failover or SCRIPT FLUSH).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace redlock {

// How long a script call may take. A Deadline bounds the whole call (a renewal must not outlive
// its lease): the EVAL after a NOSCRIPT shares it with the EVALSHA. A duration bounds each send
// (--command-timeout: "any single command"): the EVAL gets one of its own, so that a server slow
// enough to spend most of a timeout on the EVALSHA's round trip still gets the script.
class ScriptTime {
  public:
    ScriptTime(Deadline whole) : deadline_(whole) {}  // NOLINT: implicit on purpose
    ScriptTime(Millis per_send)                       // NOLINT: implicit on purpose
        : deadline_(BootClock::now() + per_send), per_send_(per_send) {}

    Deadline first() const { return deadline_; }
    // The deadline of the EVAL that follows a NOSCRIPT answered at `answered`.
    std::optional<Deadline> then(Deadline answered) const {
        if (per_send_) return answered + *per_send_;
        return std::nullopt;
    }

  private:
    Deadline deadline_;
    std::optional<Millis> per_send_;
};

class Script {
  public:
    // sha1: the body's SHA1 in hex, as Redis computes it (cmake/embed.cmake does, at build time).
    Script(std::string_view name, std::string_view body, std::string_view sha1);

    // Returns the script's reply; error replies are returned for the caller to map.
    Reply run(Connection& conn, const std::vector<std::string>& keys,
              const std::vector<std::string>& args, ScriptTime time) const;

    const std::string& name() const { return name_; }
    const std::string& sha1() const { return sha1_; }

  private:
    std::string name_;
    std::string body_;
    std::string sha1_;
};

}  // namespace redlock
