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
const Script& shared();         // --shared: every operation of a shared holder
const Script& ledger();         // a finished run: ledger entry, completed slot and the release
const Script& last_runs();      // read-only: a ledger's newest entry and newest success
const Script& history();        // read-only: a ledger's newest entries
const Script& waiters();        // read-only: the waiters in a lock's queue, for status
const Script& wait_status();    // read-only: holder, TTL and a waiter's place (live status line)
}  // namespace scripts

}  // namespace redlock
