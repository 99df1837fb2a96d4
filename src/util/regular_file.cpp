#include "util/regular_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "util/errors.hpp"

namespace redlock {

Fd open_regular_file(const std::string& path, std::string_view what) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0)
        throw UsageError(
            fmt::format("cannot read the {} '{}': {}", what, path, std::strerror(errno)));
    if (S_ISDIR(st.st_mode))
        throw UsageError(fmt::format("the {} '{}' is a directory", what, path));
    if (!S_ISREG(st.st_mode))
        throw UsageError(fmt::format("the {} '{}' is not a regular file ({})", what, path,
                                     S_ISFIFO(st.st_mode)   ? "a FIFO"
                                     : S_ISSOCK(st.st_mode) ? "a socket"
                                                            : "a device"));
    // Back to blocking reads: O_NONBLOCK was only for the open.
    int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

}  // namespace redlock
