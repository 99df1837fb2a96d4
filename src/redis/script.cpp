#include "redis/script.hpp"

#include <fmt/format.h>

#include "util/log.hpp"

namespace redlock {

Script::Script(std::string_view name, std::string_view body, std::string_view sha1)
    : name_(name), body_(body), sha1_(sha1) {}

Reply Script::run(Connection& conn, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args, Deadline deadline) const {
    std::vector<std::string> argv{"EVALSHA", sha1_, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    Reply reply = conn.command(argv, deadline);
    if (!error_text(*reply).starts_with("NOSCRIPT")) return reply;
    log::verbose("{} script not cached on {}; sending it with EVAL", name_,
                 conn.endpoint().describe());
    argv[0] = "EVAL";
    argv[1] = body_;
    return conn.command(argv, deadline);
}

}  // namespace redlock
