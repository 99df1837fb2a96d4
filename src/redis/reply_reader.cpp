// First: hiredis.h includes sds.h without C linkage, which makes its functions unlinkable from
// C++; included here first, its guard keeps hiredis.h from declaring them again.
extern "C" {
#include <hiredis/sds.h>
}
#include "redis/reply_reader.hpp"

#include <fmt/format.h>

#include <cstring>
#include <mutex>
#include <new>

namespace redlock {
namespace {

const redisReplyObjectFunctions* defaults = nullptr;
redisReplyObjectFunctions bounded;
std::once_flag init;
// Per thread: the renewer and the main loop each read their own replies, and a thread reads one
// reply whole (Connection::read_reply) or drops its connection, reader and all, before another.
thread_local long long refused_elements = 0;
thread_local bool refused_in_all = false;
// The elements of the arrays of the reply being read so far, nested ones included.
thread_local long long reply_elements = 0;

void* create_bounded_array(const redisReadTask* task, int elements) {
    if (elements > max_reply_elements) {
        refused_elements = elements;
        refused_in_all = false;
        return nullptr;  // hiredis turns this into a reader error
    }
    // Each array alone is bounded above; many of them nested are not (16 arrays of a million
    // integers fit the byte cap and cost 1.1 GB), so the whole reply is counted too. An array
    // without a parent starts a new reply.
    if (!task->parent) reply_elements = 0;
    reply_elements += elements > 0 ? elements : 0;
    if (reply_elements > max_reply_total_elements) {
        refused_elements = reply_elements;
        refused_in_all = true;
        return nullptr;
    }
    return defaults->createArray(task, elements);
}

}  // namespace

redisReader* new_reply_reader() {
    redisReader* reader = redisReaderCreate();
    if (!reader) throw std::bad_alloc();
    // hiredis keeps its default functions private; the first reader shows where they are.
    std::call_once(init, [&] {
        defaults = reader->fn;
        bounded = *reader->fn;
        bounded.createArray = create_bounded_array;
    });
    reader->fn = &bounded;
    refused_elements = 0;
    refused_in_all = false;
    return reader;
}

std::size_t unparsed_bytes(const redisReader& reader) {
    return reader.len > reader.pos ? reader.len - reader.pos : 0;
}

int feed_reader(redisReader& reader, const char* buf, std::size_t len) {
    // Only once the buffer holds more than a read's worth: small replies keep hiredis's sizes.
    if (reader.buf && sdsavail(reader.buf) < len && sdslen(reader.buf) > len) {
        sds grown = sdsMakeRoomFor(reader.buf, sdslen(reader.buf));
        if (!grown) throw std::bad_alloc();
        reader.buf = grown;
    }
    return redisReaderFeed(&reader, buf, len);
}

std::string reader_error(const redisReader& reader) {
    if (refused_elements > 0 && std::strcmp(reader.errstr, "Out of memory") == 0 && refused_in_all)
        return fmt::format(
            "a reply of more than {} elements in all, more than any reply can have here",
            max_reply_total_elements);
    if (refused_elements > 0 && std::strcmp(reader.errstr, "Out of memory") == 0)
        return fmt::format("an array of {} elements, more than any reply can have here ({})",
                           refused_elements, max_reply_elements);
    return reader.errstr;
}

}  // namespace redlock
