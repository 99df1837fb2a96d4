// Who holds a lock, in words: this process's own HolderInfo for --hold-info, and the phrase the
// "busy" message uses for another holder ("web-2 pid 4120 (user deploy) for 12m3s, ...").
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lock/node/holder_info.hpp"
#include "lock/node/results.hpp"

namespace redlock {

// The most of the command line recorded beside a lock: enough to recognise the job, while a
// huge generated command line cannot bloat every lock and every busy reply.
inline constexpr std::size_t max_recorded_command = 1024;

// This host's name, our pid, our effective user's name and `command` joined with spaces
// (cut to max_recorded_command bytes with "..." appended).
HolderInfo this_process_info(const std::vector<std::string>& command);

// Whether the passwd line of nsswitch.conf text `conf` names "files" as the first source with
// the default action after it, so that a uid found in /etc/passwd is what getpwuid returns.
bool nsswitch_passwd_files_first(std::string_view conf);
// The name of the first entry for `uid` in /etc/passwd text `passwd`, as glibc's files source
// reads it; nullopt when there is none, or on a NIS "+"/"-" line, which only getpwuid interprets.
std::optional<std::string> passwd_file_user(std::string_view passwd, uid_t uid);

// `command` joined with spaces and cut to `limit` bytes on a UTF-8 character boundary.
std::string command_line_summary(const std::vector<std::string>& command, std::size_t limit);

// "web-2 pid 4120 (user deploy) for 12m3s, expires in 17s" when the holder recorded its info
// (how long uses Redis's clock: its now minus acquired_ms), else "an unknown holder, expires in
// 17s"; for shared holders "2 shared holders (web-2 pid 4120 (user deploy) for 3s and 1 more),
// expires in 17s".
std::string describe_holder(const AcquireResult& busy);

}  // namespace redlock
