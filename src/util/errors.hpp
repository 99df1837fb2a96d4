// The program's exception family: each carries the exit status it maps to, so main.cpp can turn
// any failure into one "redlock-run: ..." line and a documented code.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

#include "util/exit_codes.hpp"

namespace redlock {

class Error : public std::runtime_error {
  public:
    Error(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
    int code() const noexcept { return code_; }

  private:
    int code_;
};

struct UsageError : Error {
    explicit UsageError(const std::string& m) : Error(m, exit_code::usage) {}
};

// Network failure, timeout, or a server that cannot serve writes right now. Retryable.
struct RedisUnavailable : Error {
    explicit RedisUnavailable(const std::string& m) : Error(m, exit_code::unavailable) {}
};

// A command was (or may have been) sent and its reply never came: a timeout, a reset, a closed
// connection. Unlike an error reply, Redis may have run it, which an acquire must not forget
// (acquire_retry.hpp).
struct ReplyLost : RedisUnavailable {
    explicit ReplyLost(const std::string& m) : RedisUnavailable(m) {}
};

// The deadline passed while waiting for a reply to a command that went out whole: the connection
// is intact and the reply may still come (Connection keeps such a connection, see owed_).
struct ReplyTimedOut : RedisUnavailable {
    explicit ReplyTimedOut(const std::string& m) : RedisUnavailable(m) {}
};

struct AuthError : Error {
    explicit AuthError(const std::string& m) : Error(m, exit_code::auth) {}
};

// Fewer replicas acknowledged than --min-replicas asks for. Exit 69 like Redis's own NOREPLICAS
// (min-replicas-to-write): the lock cannot be had with the asked-for durability right now.
struct TooFewReplicas : RedisUnavailable {
    explicit TooFewReplicas(const std::string& m) : RedisUnavailable(m) {}
};

// The key exists but is not a string lock (WRONGTYPE, or a fence counter that is not a number).
struct DataError : Error {
    explicit DataError(const std::string& m) : Error(m, exit_code::data) {}
};

// The server is too old for redlock-run's scripts (Redis before 6.0.6 has no LPOS). Not a
// RedisUnavailable: retrying cannot help, so no retry loop should spend its time on it.
struct UnsupportedServer : Error {
    explicit UnsupportedServer(const std::string& m) : Error(m, exit_code::unavailable) {}
};

// A shared library that an option needs could not be loaded (--ping: libcurl). Found out before
// the lock is taken; 69 as for any service that is not there (EX_UNAVAILABLE).
struct LibraryUnavailable : Error {
    explicit LibraryUnavailable(const std::string& m) : Error(m, exit_code::unavailable) {}
};

// Redis answered with an error we have no better mapping for.
struct RedisError : Error {
    explicit RedisError(const std::string& m) : Error(m, exit_code::internal) {}
};

// A reply of the wrong shape: a type, an element count or a number that the command or script
// cannot answer (a server that is not Redis, or a key someone else wrote). A RedisError, so that
// it exits 70 as it always has; thrown by the checked accessors of redis/reply.hpp.
struct UnexpectedReply : RedisError {
    explicit UnexpectedReply(const std::string& m) : RedisError(m) {}
};

// A rediss:// connection failed in TLS itself: the server's certificate did not verify (unknown
// CA, wrong host name, expired), the server refused ours, or the other end does not speak TLS.
// Unlike RedisUnavailable, retrying does not help until someone changes the configuration.
struct TlsError : Error {
    explicit TlsError(const std::string& m) : Error(m, exit_code::tls) {}
};

// The command could not be started: 127 when it does not exist, 126 when it cannot be run, 71
// when the system gave no process for it or its watchdog (fork failed: a process limit such as
// RLIMIT_NPROC or a cgroup's pids.max, or memory). The run records it as failed-to-start.
struct SpawnError : Error {
    SpawnError(const std::string& m, int code) : Error(m, code) {}
};

// release --token T refused: the lock is held under another token (left untouched).
struct NotOwner : Error {
    explicit NotOwner(const std::string& m) : Error(m, exit_code::not_owner) {}
};

// A wait was cut short because its cancel descriptor became readable: the caller (a signal, the
// renewer's stop) asked to give up. Not an Error: it is a decision of ours, not a failure, and
// every caller that sets a cancel descriptor catches it; one that reaches main.cpp is a bug.
struct Cancelled : std::exception {
    const char* what() const noexcept override { return "operation cancelled"; }
};

// What main.cpp reports for a failure that reached it: the message (log adds "redlock-run: ")
// and the exit status. The one mapping from an exception to an exit code, here rather than in
// main.cpp so that the unit tests check the very code the binary returns.
struct Failure {
    std::string message;
    int code;
};

inline Failure failure_of(const std::exception& e) {
    if (const auto* ours = dynamic_cast<const Error*>(&e)) return {ours->what(), ours->code()};
    return {std::string("internal error: ") + e.what(), exit_code::internal};
}

}  // namespace redlock
