// Which scripts this user's runs have seen a Redis server run, kept between runs (issue 35).
//
// A script goes out by its digest (EVALSHA) when the server has it, else with its body (EVAL),
// and a digest that the server lacks costs a round trip of its own (NOSCRIPT, then the EVAL).
// Each run is a new process, so without a memory the first run on a server always paid it, and
// sending every body on every run costs Redis a SHA1 of 37 KB per run instead (bench/RESULTS.md).
// With it, a server this user never ran a script on gets the body at once (one round trip, a
// few more bytes), and one that ran it gets the digest; only a server whose cache was emptied
// since (a restart, a failover, SCRIPT FLUSH) costs the NOSCRIPT round trip, once.
//
// It is a hint, never a safety input: a wrong entry costs one round trip (a script taken as
// cached that is not) or a body sent for nothing, and every error while reading or writing it
// leaves the run as if there were no memory (EVALSHA first). It lives in
// $XDG_CACHE_HOME/redlock-run (else $HOME/.cache/redlock-run), a file per server named by a
// digest of the server's address, holding the digests of the scripts that ran there.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"

namespace redlock {

class ScriptMemory {
  public:
    // The memory of the server that `server` names ("127.0.0.1:6379", an Endpoint's describe()),
    // under the directory that $XDG_CACHE_HOME or $HOME give; not usable() when neither gives
    // a directory this user owns alone (the checks are open_in's).
    static ScriptMemory open(std::string_view server);
    // The same under `cache_home` (what $XDG_CACHE_HOME names). Usable only when cache_home
    // and its redlock-run directory (created 0700 when missing) are directories owned by this
    // user that nobody else may write to, reached without following a symbolic link below
    // `cache_home`: a root run whose HOME names another user's directory must never write
    // where that user can plant a link. The file is read only when it is a regular file of
    // this user's; lines that are not a digest are ignored.
    static ScriptMemory open_in(const std::string& cache_home, std::string_view server);

    ScriptMemory() = default;

    bool usable() const { return static_cast<bool>(dir_); }
    // Whether a run of this user's saw `sha1` run on the server, since its cache was last
    // found emptied. False when not usable().
    bool knows(std::string_view sha1) const;
    // It ran (an EVAL or an EVALSHA answered): remembered, and written when it is new.
    void learn(std::string_view sha1);
    // A script remembered was missing (NOSCRIPT): the server's cache was emptied, so nothing
    // remembered holds any more; forgotten, and the file emptied.
    void forget_all();

    // The most digests a file keeps: about three versions' worth of the dozen scripts a
    // version sends; the oldest go first.
    static constexpr std::size_t most = 48;

  private:
    void write() const;

    Fd dir_;
    std::string file_;
    std::vector<std::string> known_;
};

}  // namespace redlock
