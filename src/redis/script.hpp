// A Lua script sent by EVALSHA, falling back to EVAL when the server's script cache lacks it
// (after a restart, a failover or SCRIPT FLUSH).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"

namespace redlock {

class Script {
  public:
    // sha1: the body's SHA1 in hex, as Redis computes it (cmake/embed.cmake does, at build time).
    Script(std::string_view name, std::string_view body, std::string_view sha1);

    // Returns the script's reply; error replies are returned for the caller to map.
    Reply run(Connection& conn, const std::vector<std::string>& keys,
              const std::vector<std::string>& args, Deadline deadline) const;

    const std::string& name() const { return name_; }
    const std::string& sha1() const { return sha1_; }

  private:
    std::string name_;
    std::string body_;
    std::string sha1_;
};

}  // namespace redlock
