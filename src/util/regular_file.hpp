// Opening a file a user names for a secret or a certificate, refusing anything but a regular file.
#pragma once

#include <string>
#include <string_view>

#include "util/fd.hpp"

namespace redlock {

// `path` opened read-only, or UsageError naming `what` ("password file", "--cacert file"): when
// it cannot be opened, or is not a regular file. A FIFO would block open() and then read() until
// some writer came (forever, for a typo'd path to one), a device never ends, and a directory
// cannot be read. The open itself is non-blocking so that a FIFO is refused, not waited on.
Fd open_regular_file(const std::string& path, std::string_view what);

// The directory that `path` names its file in: "." for a bare name, "/" for a file at the root.
std::string directory_of(const std::string& path);

// UsageError "OPTION 'PATH': its directory 'DIR' does not exist" (or "is not writable (why)")
// unless this user may create files in PATH's directory: for a file the run writes (or its
// command does), found out before the lock is taken rather than after the job ran.
void require_writable_directory(const std::string& path, std::string_view option);

}  // namespace redlock
