#include "lock/node/lock_name.hpp"

#include <fmt/format.h>

#include "lock/node/keys.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

bool has_control_character(std::string_view s) {
    for (unsigned char c : s)
        if (c < 0x20 || c == 0x7f) return true;
    return false;
}

}  // namespace

void check_lock_name(std::string_view name, std::string_view prefix,
                     std::string_view prefix_label) {
    if (name.empty()) throw UsageError("the lock NAME must not be empty");
    std::size_t size = prefix.size() + name.size();
    if (size > max_key_bytes)
        throw UsageError(fmt::format("the lock key ({} and NAME) is {} bytes long; at most {}",
                                     prefix_label, size, max_key_bytes));
    // A newline in a name usually comes from a script's $(...) or a file read whole; taking the
    // lock under that name would make a different lock than the one meant.
    if (has_control_character(name))
        throw UsageError(fmt::format("the lock NAME '{}' contains a control character",
                                     excerpt(printable(name))));
    if (has_control_character(prefix))
        throw UsageError(fmt::format("the {} '{}' contains a control character", prefix_label,
                                     excerpt(printable(prefix))));
    // "{job}:fence" is job's fence counter: locked as a name of its own, it would break job's
    // fences (and a run of job would find a lock token where its counter belongs).
    std::string key = fmt::format("{}{}", prefix, name);
    if (std::optional<CompanionOf> of = companion_of(key))
        throw UsageError(
            fmt::format("the lock key '{}' ({} and NAME) is a key of lock '{}' (its {}); choose "
                        "another NAME",
                        excerpt(printable(key)), prefix_label, excerpt(printable(of->lock)),
                        excerpt(printable(of->suffix))));
}

}  // namespace redlock
