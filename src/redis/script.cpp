#include "redis/script.hpp"

#include <fmt/format.h>

#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {

Script::Script(std::string_view name, std::string_view body, std::string_view sha1)
    : name_(name), body_(body), sha1_(sha1) {}

// EVALSHA and the EVAL after NOSCRIPT share one deadline: together they are one command to the
// caller, bounded by one --command-timeout, never two.
Reply Script::run(Connection& conn, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args, Deadline deadline) const {
    std::vector<std::string> argv{"EVALSHA", sha1_, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    Deadline sent = BootClock::now();
    Reply reply = conn.command(argv, deadline);
    if (!error_text(*reply).starts_with("NOSCRIPT")) return reply;
    // The EVAL will take about as long as the EVALSHA did. With less than that left it would
    // most likely time out after Redis ran it, an outcome the caller cannot know (ReplyLost):
    // failing now, with nothing sent, is the cleaner error, and the caller's retry will have a
    // deadline of its own.
    Deadline answered = BootClock::now();
    if (deadline - answered < answered - sent)
        throw RedisUnavailable(fmt::format(
            "{} script not cached on {} and too little of the command timeout left to send it "
            "(the EVALSHA took {}, {} left)",
            name_, conn.endpoint().describe(),
            format_duration(std::chrono::ceil<Millis>(answered - sent)),
            format_duration(std::chrono::floor<Millis>(
                std::max(deadline - answered, BootClock::duration(0))))));
    log::verbose("{} script not cached on {}; sending it with EVAL", name_,
                 conn.endpoint().describe());
    argv[0] = "EVAL";
    argv[1] = body_;
    return conn.command(argv, deadline);
}

}  // namespace redlock
