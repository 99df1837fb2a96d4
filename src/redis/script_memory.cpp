#include "redis/script_memory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include <fmt/format.h>

namespace redlock {
namespace {

constexpr std::size_t file_limit = 8192;  // 48 lines of 41 bytes, with room to spare

// A directory that only this user may change: another user who could write to it could swap
// the file for a link to one of ours, and a root run would then write through it.
bool ours_alone(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
           (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

// `path`'s directory, made (0700) when missing and its parent is this user's: the XDG base
// directory specification's rule, without ever creating a directory inside someone else's.
Fd open_cache_home(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd && errno == ENOENT) {
        std::string parent = path.substr(0, path.find_last_of('/'));
        struct stat st {};
        if (::stat(parent.empty() ? "/" : parent.c_str(), &st) != 0 || st.st_uid != ::geteuid())
            return {};
        if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return {};
        fd.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
    return fd;
}

bool is_digest(std::string_view line) {
    return line.size() == 40 && std::all_of(line.begin(), line.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// FNV-1a: a file name per server that no address can turn into a path. Two servers whose names
// collide share a file, which costs at most a round trip now and then.
std::string file_name(std::string_view server) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : server) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return fmt::format("scripts-{:016x}", h);
}

}  // namespace

ScriptMemory ScriptMemory::open(std::string_view server) {
    // Relative paths are invalid in both (the XDG specification says to ignore them).
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') return open_in(xdg, server);
    const char* home = std::getenv("HOME");
    if (home && home[0] == '/') return open_in(std::string(home) + "/.cache", server);
    return {};
}

ScriptMemory ScriptMemory::open_in(const std::string& cache_home, std::string_view server) {
    ScriptMemory memory;
    Fd base = open_cache_home(cache_home);
    if (!base || !ours_alone(base.get())) return memory;
    Fd dir(::openat(base.get(), "redlock-run", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir && errno == ENOENT) {
        if (::mkdirat(base.get(), "redlock-run", 0700) != 0 && errno != EEXIST) return memory;
        dir.reset(
            ::openat(base.get(), "redlock-run", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!dir || !ours_alone(dir.get())) return memory;
    memory.file_ = file_name(server);
    // Not blocking, so that a FIFO planted there (by this user) cannot hang the run.
    Fd file(
        ::openat(dir.get(), memory.file_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    memory.dir_ = std::move(dir);
    struct stat st {};
    if (!file || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != ::geteuid() || st.st_size > static_cast<off_t>(file_limit))
        return memory;
    std::string text(file_limit, '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        ssize_t n = ::read(file.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    std::string_view rest = text;
    while (!rest.empty()) {
        std::string_view line = rest.substr(0, rest.find('\n'));
        rest.remove_prefix(std::min(rest.size(), line.size() + 1));
        if (is_digest(line) && !memory.knows(line)) memory.known_.emplace_back(line);
    }
    if (memory.known_.size() > most)
        memory.known_.erase(memory.known_.begin(), memory.known_.end() - most);
    return memory;
}

bool ScriptMemory::knows(std::string_view sha1) const {
    return std::find(known_.begin(), known_.end(), sha1) != known_.end();
}

void ScriptMemory::learn(std::string_view sha1) {
    if (!usable() || knows(sha1) || !is_digest(sha1)) return;
    known_.emplace_back(sha1);
    if (known_.size() > most) known_.erase(known_.begin());
    write();
}

void ScriptMemory::forget_all() {
    if (!usable() || known_.empty()) return;
    known_.clear();
    write();
}

// A new file renamed over the old one: a run reading it meanwhile sees the old list or the new,
// never half of one. Two runs that learn at once may each write theirs, and one list wins: a
// script the other learned is sent with its body once more. Errors leave the file as it was.
void ScriptMemory::write() const {
    std::string text;
    for (const std::string& sha1 : known_) text += sha1 + '\n';
    const std::string temp = fmt::format("{}.{}.tmp", file_, ::getpid());
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    Fd out(::openat(dir_.get(), temp.c_str(), flags, 0600));
    if (!out && errno == EEXIST) {  // left by a run that died with this pid
        ::unlinkat(dir_.get(), temp.c_str(), 0);
        out.reset(::openat(dir_.get(), temp.c_str(), flags, 0600));
    }
    if (!out) return;
    bool written =
        ::write(out.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
    out.reset();
    if (!written || ::renameat(dir_.get(), temp.c_str(), dir_.get(), file_.c_str()) != 0)
        ::unlinkat(dir_.get(), temp.c_str(), 0);
}

}  // namespace redlock
