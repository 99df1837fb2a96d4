#include "redis/secrets.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/errors.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/regular_file.hpp"

namespace redlock {
namespace {

std::optional<std::string> non_empty_env(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
}

}  // namespace

namespace {
std::string read_password_file_at(const std::string& path);
}  // namespace

std::string read_password_file(const std::string& path, std::string_view where) {
    try {
        return read_password_file_at(path);
    } catch (const UsageError& e) {
        // Every refusal quotes the path once: where it came from goes right after it.
        std::string message = e.what();
        std::string quoted = fmt::format("'{}'", path);
        std::size_t at = message.find(quoted);
        if (where.empty() || at == std::string::npos) throw;
        message.insert(at + quoted.size(), fmt::format(" in {}", where));
        throw UsageError(message);
    }
}

namespace {
std::string read_password_file_at(const std::string& path) {
    Fd fd = open_regular_file(path, "password file");
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && (st.st_mode & S_IROTH))
        log::warning("the password file '{}' is readable by every user (mode {:04o}); chmod o-r it",
                     path, st.st_mode & 07777);
    // A password is one line; reading a little more than any sane password is enough to see
    // where it ends, and a huge file (or /dev/zero) cannot exhaust memory.
    constexpr std::size_t limit = 64 * 1024;
    std::string data;
    char buf[4096];
    while (data.size() < limit && data.find('\n') == std::string::npos) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw UsageError(
                fmt::format("cannot read the password file '{}': {}", path, std::strerror(errno)));
        if (n == 0) break;
        data.append(buf, static_cast<std::size_t>(n));
    }
    auto eol = data.find('\n');
    if (eol == std::string::npos && data.size() >= limit)
        throw UsageError(fmt::format("the password file '{}' has no line end in its first {} bytes",
                                     path, limit));
    std::string line = data.substr(0, eol);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::fill(data.begin(), data.end(), '\0');
    if (line.empty()) throw UsageError(fmt::format("the password file '{}' is empty", path));
    keep_secret_out_of_core_dumps();
    return line;
}
}  // namespace

void keep_secret_out_of_core_dumps() {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

std::optional<std::string> resolve_password(const std::string& file,
                                            const std::optional<std::string>& from_url,
                                            std::string* source) {
    auto from = [&](const std::string& where) {
        if (source) *source = where;
    };
    from("");
    if (!file.empty()) {
        std::string password = read_password_file(file);
        from(fmt::format("--password-file '{}'", file));
        return password;
    }
    std::optional<std::string> password = from_url;
    if (password) from("the URL");
    for (const char* name : {"REDLOCK_PASSWORD", "REDISCLI_AUTH"}) {
        if (password) break;
        password = non_empty_env(name);
        if (password) from(fmt::format("{} in the environment", name));
    }
    if (password) keep_secret_out_of_core_dumps();
    return password;
}

void scrub_secret_environment() {
    for (const char* name : secret_env_vars) {
        // getenv finds only the first entry of a name that appears twice; walk them all.
        std::size_t len = std::strlen(name);
        for (char** entry = environ; *entry; ++entry)
            if (std::strncmp(*entry, name, len) == 0 && (*entry)[len] == '=')
                std::memset(*entry + len + 1, 'x', std::strlen(*entry + len + 1));
        ::unsetenv(name);
    }
}

}  // namespace redlock
