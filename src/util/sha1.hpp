// SHA1 in hex, as Redis names a script by (EVALSHA): for the script variants made at run time
// (script.cpp's database guard), whose digests cannot come from the build as the others do.
// Not for anything that needs a secure hash.
#pragma once

#include <string>
#include <string_view>

namespace redlock {

// The 40 lowercase hexadecimal digits of SHA1(`data`) (FIPS 180-4).
std::string sha1_hex(std::string_view data);

}  // namespace redlock
