// The lock's Lua scripts (src/lock/scripts/*.lua, embedded at build time by cmake/embed.cmake).
// Every step that reads and then writes a lock runs as one script, so that Redis applies it
// atomically: that is what makes compare-and-delete safe against a concurrent new holder.
#pragma once

#include "redis/script.hpp"

namespace redlock {

namespace scripts {
const Script& acquire();
const Script& renew();
const Script& release();
const Script& status();         // read-only: token, TTL, fence and holder info of one lock
const Script& force_release();  // release --force
const Script& abandon();        // give up: compare-and-delete our lock, leave the queue
const Script& raise_fence();    // quorum acquire: second, token-checked fence step
const Script& permits();        // --permits N > 1: every operation on a permits lock
const Script& slot();           // --once-per: Redis's clock and the latest completed slot
const Script& ledger();         // a finished run: ledger entry and completed slot
const Script& wait_status();    // read-only: holder, TTL and a waiter's place (live status line)
}  // namespace scripts

}  // namespace redlock
