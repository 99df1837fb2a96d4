// The per-acquisition secret that proves ownership of a lock.
#pragma once

#include <string>

namespace redlock {

// 128 bits from the kernel CSPRNG (getrandom), as 32 lowercase hex digits.
std::string new_token();

}  // namespace redlock
