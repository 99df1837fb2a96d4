// The hiredis reply reader with a bound on array sizes. hiredis 0.14 allocates an array's element
// table as soon as it has read the "*N" header, so 14 bytes from a hostile or broken server
// ("*2000000000\r\n") would make it calloc 16 GB; the fuzzer (tests/fuzz/reply_fuzz.cpp) found it.
#pragma once

#include <hiredis/hiredis.h>

#include <string>

namespace redlock {

// Far more elements than any reply redlock-run asks for (SCAN with COUNT 1000 returns about a
// thousand keys); 8 MB of element table at most.
inline constexpr int max_reply_elements = 1 << 20;

// A new reader (free it with redisReaderFree) that refuses arrays of more than
// max_reply_elements as a protocol error. Throws std::bad_alloc.
redisReader* new_reply_reader();

// The reader's error, in words: hiredis reports a refused array as "Out of memory".
std::string reader_error(const redisReader& reader);

}  // namespace redlock
