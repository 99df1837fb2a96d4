// Where the Redis password comes from, and keeping it out of places other users or the command
// can read: the command's environment and our own /proc/<pid>/environ.
#pragma once

#include <array>
#include <optional>
#include <string>

namespace redlock {

// Variables that carry the password or say where it is, and REDLOCK_PING (--ping), whose URL lets
// anyone ping the job's check and would make a nested redlock-run ping it too. The command does
// not get them unless --keep-env asks for it: it has no business with the lock's credentials.
inline constexpr std::array<const char*, 5> secret_env_vars{
    "REDLOCK_URL", "REDISCLI_AUTH", "REDLOCK_PASSWORD", "REDLOCK_PASSWORD_FILE", "REDLOCK_PING"};

// The password to log in with. `file` (--password-file) beats the URL's password, which beats
// REDLOCK_PASSWORD, which beats REDISCLI_AUTH. Throws UsageError for an unreadable or empty file;
// warns when the file is readable by every user. `source`, when given, is set to where the
// password came from ("the URL", "REDLOCK_PASSWORD in the environment", ...; empty for none).
std::optional<std::string> resolve_password(const std::string& file,
                                            const std::optional<std::string>& from_url,
                                            std::string* source = nullptr);

// Reads the first line of `path` (a trailing "\r" dropped). Throws UsageError.
std::string read_password_file(const std::string& path);

// Makes this process non-dumpable (no core file, no ptrace or /proc/<pid>/mem by other users)
// from now on: a password is in its memory. resolve_password and read_password_file call it
// whenever they return a password.
void keep_secret_out_of_core_dumps();

// Removes secret_env_vars (every entry of each: the environment may hold a name twice) from our
// environment, so that the command (which inherits it) never
// sees them, after overwriting their values in place: /proc/<pid>/environ shows the memory the
// kernel set up at exec, which unsetenv alone leaves untouched. Call it once everything has been
// read from them and before any thread starts.
void scrub_secret_environment();

}  // namespace redlock
