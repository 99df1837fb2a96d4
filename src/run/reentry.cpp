#include "run/reentry.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lock/node/keys.hpp"
#include "redis/connection.hpp"
#include "run/child.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

[[noreturn]] void exec_command(const std::vector<std::string>& command) {
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    int err = errno;
    if (err == ENOENT || err == ENOTDIR)
        throw SpawnError(fmt::format("{}: command not found", command.front()),
                         exit_code::not_found);
    throw SpawnError(fmt::format("{}: cannot run: {}", command.front(), std::strerror(err)),
                     exit_code::not_executable);
}

}  // namespace

void exec_if_held_by_ancestor(LockBackend& lock, const std::vector<std::string>& command) {
    const std::string& key = lock.keys().key;
    std::string token = env_or_empty("REDLOCK_TOKEN");
    if (token.empty() || env_or_empty("REDLOCK_KEY") != key ||
        env_or_empty("REDLOCK_REDIS") != lock.identity())
        return;

    // The environment alone proves nothing: the ancestor may have lost the lock, or this may be
    // a stale environment (a job started from a shell that once ran under the lock).
    if (!lock.holds(token))
        throw Error(fmt::format("lock '{}' on {} is no longer held by the parent redlock-run (the "
                                "key does not hold REDLOCK_TOKEN); not running the command",
                                key, lock.identity()),
                    exit_code::lock_lost);
    log::verbose(
        "lock '{}' on {} is held by a parent redlock-run (token verified); running the "
        "command directly",
        key, lock.identity());
    exec_command(command);
}

}  // namespace redlock
