// The steps the permits and shared modes take alike, each one operation of the mode's script.
#include "lock/node/scripted_mode.hpp"

#include <fmt/format.h>

#include "lock/node/lock_replies.hpp"

namespace redlock {

bool ScriptedMode::abandon(Connection& conn, const LockKeys& keys, const std::string& token) {
    return abandon_op(conn, keys, token, "", Millis(0));
}

void ScriptedMode::step_back(Connection& conn, const LockKeys& keys, const std::string& token,
                             long long ticket, Millis alive) {
    abandon_op(conn, keys, token, fmt::format("ticket:{}", ticket), alive);
}

Reply ScriptedMode::acquire_op(Connection& conn, const LockKeys& keys,
                               std::vector<std::string> args, const HolderInfo* info,
                               const SetupGiveBack* give_back) const {
    if (info) {
        auto fields = info->own_fields();
        args.insert(args.end(), fields.begin(), fields.end());
    }
    return run_op(conn, keys, "acquire", std::move(args), conn.timeouts().command, give_back);
}

FinishResult ScriptedMode::finish_op(Connection& conn, const LockKeys& keys,
                                     std::vector<std::string> args, const RunRecord& record) const {
    Reply reply = run_op(conn, keys, "finish", with_record_args(std::move(args), record),
                         conn.timeouts().command);
    return finish_result(reply, keys.key, /*released=*/true);
}

bool ScriptedMode::abandon_op(Connection& conn, const LockKeys& keys, const std::string& token,
                              const std::string& how, Millis alive) const {
    Reply reply = run_op(conn, keys, "abandon", {token, how, std::to_string(alive.count())},
                         conn.timeouts().command);
    return abandon_result(reply, keys.key);
}

}  // namespace redlock
