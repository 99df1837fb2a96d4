// What the permits and shared modes have in common: every step of theirs is one operation of
// their own script (permits.lua, shared.lua), named by its first argument.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lock/node/lock_mode.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"

namespace redlock {

class ScriptedMode : public LockMode {
  public:
    // The 'abandon' operation: gives the token's hold back and leaves the queue.
    bool abandon(Connection& conn, const LockKeys& keys, const std::string& token) override;
    // The 'abandon' operation keeping the queue place at `ticket`, marked alive for `alive`.
    void step_back(Connection& conn, const LockKeys& keys, const std::string& token,
                   long long ticket, Millis alive) override;

  protected:
    // Runs operation `op` of the mode's script with `args` after the arguments every operation
    // takes.
    // `give_back`: the acquire's (LockMode::acquire); the other operations have none.
    virtual Reply run_op(Connection& conn, const LockKeys& keys, std::string_view op,
                         std::vector<std::string> args, ScriptTime time,
                         const SetupGiveBack* give_back = nullptr) const = 0;

    // The 'acquire' operation with `args`, then the holder's info fields when given.
    Reply acquire_op(Connection& conn, const LockKeys& keys, std::vector<std::string> args,
                     const HolderInfo* info, const SetupGiveBack* give_back) const;
    // The 'finish' operation: `args` (token, keep, ...) and then the run's record.
    FinishResult finish_op(Connection& conn, const LockKeys& keys, std::vector<std::string> args,
                           const RunRecord& record) const;
    // The 'abandon' operation; `how` is "", "ticket:N" or "keep:P" (see the scripts).
    bool abandon_op(Connection& conn, const LockKeys& keys, const std::string& token,
                    const std::string& how, Millis alive) const;
};

}  // namespace redlock
