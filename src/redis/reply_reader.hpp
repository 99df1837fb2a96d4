// The hiredis reply reader with a bound on array sizes. hiredis 0.14 allocates an array's element
// table as soon as it has read the "*N" header, so 14 bytes from a hostile or broken server
// ("*2000000000\r\n") would make it calloc 16 GB; the fuzzer (tests/fuzz/reply_fuzz.cpp) found it.
#pragma once

#include <hiredis/hiredis.h>

#include <cstddef>
#include <string>

namespace redlock {

// Far more elements than any reply redlock-run asks for (SCAN with COUNT 250 returns a few
// hundred keys); 8 MB of element table at most.
inline constexpr int max_reply_elements = 1 << 20;
// The same bound over a whole reply, nested arrays' elements included: about 56 MB of reply
// objects at most. The largest real one, CLUSTER SLOTS of 16384 single-slot ranges with five
// replicas each, has about 460,000.
inline constexpr long long max_reply_total_elements = 1 << 20;

// The most bytes one reply may take on the wire, 64 MiB: a bulk header may announce 900 GB and
// a server may then stream it, and hiredis buffers a bulk string whole. The largest replies here
// are list's pipelined batches (256 status replies, each with holder info of a command line up
// to the 128 KiB an argument may have: 32 MiB at worst) and CLUSTER SLOTS (16384 ranges, about
// 2 MiB); a real lock reply is a few hundred bytes.
inline constexpr std::size_t max_reply_bytes = std::size_t{64} << 20;

// The bytes the reader holds that it has not turned into replies yet.
std::size_t unparsed_bytes(const redisReader& reader);

// A new reader (free it with redisReaderFree) that refuses arrays of more than
// max_reply_elements, and replies of more than max_reply_total_elements in all, as a protocol
// error. Throws std::bad_alloc.
redisReader* new_reply_reader();

// redisReaderFeed, with the reader's buffer grown by doubling: hiredis (sds) grows it by 1 MiB at
// a time past the first MiB, copying all of it each time, so a reply streamed up to
// max_reply_bytes cost 64 copies of up to 64 MiB (2 GiB of memcpy; 90 s of a 2-core machine under
// AddressSanitizer). Doubling keeps what a hostile server can make us copy linear in what it
// sends. Returns redisReaderFeed's result; throws std::bad_alloc.
int feed_reader(redisReader& reader, const char* buf, std::size_t len);

// The reader's error, in words: hiredis reports a refused array as "Out of memory".
std::string reader_error(const redisReader& reader);

}  // namespace redlock
