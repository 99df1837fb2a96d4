#include "util/regular_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

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

std::string directory_of(const std::string& path) {
    std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

void require_writable_directory(const std::string& path, std::string_view option) {
    std::string dir = directory_of(path);
    if (::access(dir.c_str(), W_OK | X_OK) == 0) return;
    throw UsageError(fmt::format("{} '{}': its directory '{}' {}", option, path, dir,
                                 errno == ENOENT
                                     ? std::string("does not exist")
                                     : fmt::format("is not writable ({})", std::strerror(errno))));
}

}  // namespace redlock
