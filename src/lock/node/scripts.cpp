#include "lock/node/scripts.hpp"

namespace redlock {

namespace scripts_src {
extern const char* const acquire_lua;
extern const char* const acquire_lua_sha1;
extern const char* const renew_lua;
extern const char* const renew_lua_sha1;
extern const char* const release_lua;
extern const char* const release_lua_sha1;
extern const char* const status_lua;
extern const char* const status_lua_sha1;
extern const char* const force_release_lua;
extern const char* const force_release_lua_sha1;
extern const char* const abandon_lua;
extern const char* const abandon_lua_sha1;
extern const char* const raise_fence_lua;
extern const char* const raise_fence_lua_sha1;
extern const char* const permits_lua;
extern const char* const permits_lua_sha1;
extern const char* const shared_lua;
extern const char* const shared_lua_sha1;
extern const char* const ledger_lua;
extern const char* const ledger_lua_sha1;
extern const char* const last_runs_lua;
extern const char* const last_runs_lua_sha1;
extern const char* const history_lua;
extern const char* const history_lua_sha1;
extern const char* const wait_status_lua;
extern const char* const wait_status_lua_sha1;
extern const char* const waiters_lua;
extern const char* const waiters_lua_sha1;
}  // namespace scripts_src

namespace scripts {

// release and abandon give a lock back: Send::body (script.hpp says why). The ledger script,
// a run's usual release, keeps EVALSHA first: when it fails the run falls back to release.
//
// Each Script is made once and never destroyed (allocated, not a static object): a quorum's
// worker threads may still be sending a background clean-up (a lagging node's release or queue
// exit, quorum.cpp) while the main thread returns from main and runs static destructors.
const Script& acquire() {
    static const Script& s =
        *new Script("acquire", scripts_src::acquire_lua, scripts_src::acquire_lua_sha1);
    return s;
}
const Script& renew() {
    static const Script& s =
        *new Script("renew", scripts_src::renew_lua, scripts_src::renew_lua_sha1);
    return s;
}
const Script& release() {
    static const Script& s =
        *new Script("release", scripts_src::release_lua, scripts_src::release_lua_sha1, Send::body);
    return s;
}
const Script& status() {
    static const Script& s =
        *new Script("status", scripts_src::status_lua, scripts_src::status_lua_sha1);
    return s;
}
const Script& force_release() {
    static const Script& s = *new Script("force_release", scripts_src::force_release_lua,
                                         scripts_src::force_release_lua_sha1);
    return s;
}
const Script& abandon() {
    static const Script& s =
        *new Script("abandon", scripts_src::abandon_lua, scripts_src::abandon_lua_sha1, Send::body);
    return s;
}
const Script& raise_fence() {
    static const Script& s =
        *new Script("raise_fence", scripts_src::raise_fence_lua, scripts_src::raise_fence_lua_sha1);
    return s;
}
const Script& permits() {
    static const Script& s =
        *new Script("permits", scripts_src::permits_lua, scripts_src::permits_lua_sha1);
    return s;
}
const Script& shared() {
    static const Script& s =
        *new Script("shared", scripts_src::shared_lua, scripts_src::shared_lua_sha1);
    return s;
}
const Script& ledger() {
    static const Script& s =
        *new Script("ledger", scripts_src::ledger_lua, scripts_src::ledger_lua_sha1);
    return s;
}
const Script& last_runs() {
    static const Script& s =
        *new Script("last_runs", scripts_src::last_runs_lua, scripts_src::last_runs_lua_sha1);
    return s;
}
const Script& history() {
    static const Script& s =
        *new Script("history", scripts_src::history_lua, scripts_src::history_lua_sha1);
    return s;
}
const Script& wait_status() {
    static const Script& s =
        *new Script("wait_status", scripts_src::wait_status_lua, scripts_src::wait_status_lua_sha1);
    return s;
}
const Script& waiters() {
    static const Script& s =
        *new Script("waiters", scripts_src::waiters_lua, scripts_src::waiters_lua_sha1);
    return s;
}
}  // namespace scripts

}  // namespace redlock
