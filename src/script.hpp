// A Lua script sent by EVALSHA, falling back to EVAL when the server's script cache lacks it
// (after a restart, a failover or SCRIPT FLUSH).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "connection.hpp"

namespace redlock {

class Script {
  public:
    Script(std::string_view name, std::string_view body);

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

namespace scripts {
const Script& acquire();
const Script& renew();
const Script& release();
const Script& status();         // read-only: token, TTL, fence and holder info of one lock
const Script& force_release();  // release --force
const Script& abandon();        // give up: compare-and-delete our lock, leave the queue
const Script& raise_fence();    // quorum acquire: second, token-checked fence step
}  // namespace scripts

}  // namespace redlock
