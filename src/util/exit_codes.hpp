// Every exit status redlock-run itself produces, in one place; the man page and README mirror it.
#pragma once

namespace redlock::exit_code {

inline constexpr int ok = 0;
inline constexpr int lock_free = 1;      // status: the lock is not held (as `systemctl is-active`)
inline constexpr int not_owner = 1;      // release --token: another token holds the lock
inline constexpr int busy_default = 75;  // EX_TEMPFAIL, changed with --conflict-exit-code
inline constexpr int usage = 64;         // EX_USAGE
inline constexpr int data = 65;          // EX_DATAERR: the key holds something that is not a lock
inline constexpr int unavailable = 69;  // EX_UNAVAILABLE: Redis unreachable, timed out, not primary
inline constexpr int internal = 70;     // EX_SOFTWARE
inline constexpr int cannot_fork = 71;  // EX_OSERR: no process for the command (or its watchdog)
inline constexpr int auth = 77;         // EX_NOPERM: AUTH refused or ACL denied a command
inline constexpr int tls = 78;          // EX_CONFIG: TLS verification or negotiation failed
inline constexpr int lock_lost = 76;    // the lock was lost while the command ran
inline constexpr int stuck = 79;        // --heartbeat-timeout or --max-renewals stopped the command
inline constexpr int max_runtime = 124;  // as GNU timeout
inline constexpr int not_executable = 126;
inline constexpr int not_found = 127;
inline constexpr int signal_base = 128;  // 128+N when signal N ended the command

}  // namespace redlock::exit_code
