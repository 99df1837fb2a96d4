// Who holds a lock, in words: this process's own HolderInfo for --hold-info, and the phrase the
// "busy" message uses for another holder ("web-2 pid 4120 (user deploy) for 12m3s, ...").
#pragma once

#include <string>
#include <vector>

#include "lock/holder_info.hpp"
#include "lock/lock.hpp"

namespace redlock {

// The most of the command line recorded beside a lock: enough to recognise the job, while a
// huge generated command line cannot bloat every lock and every busy reply.
inline constexpr std::size_t max_recorded_command = 1024;

// This host's name, our pid, our effective user's name and `command` joined with spaces
// (cut to max_recorded_command bytes with "..." appended).
HolderInfo this_process_info(const std::vector<std::string>& command);

// `command` joined with spaces and cut to `limit` bytes on a UTF-8 character boundary.
std::string command_line_summary(const std::vector<std::string>& command, std::size_t limit);

// "web-2 pid 4120 (user deploy) for 12m3s, expires in 17s" when the holder recorded its info
// (how long uses Redis's clock: its now minus acquired_ms), else "an unknown holder, expires in
// 17s".
std::string describe_holder(const AcquireResult& busy);

}  // namespace redlock
