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
// Per thread: the renewer and the main loop each read their own replies.
thread_local long long refused_elements = 0;

void* create_bounded_array(const redisReadTask* task, int elements) {
    if (elements > max_reply_elements) {
        refused_elements = elements;
        return nullptr;  // hiredis turns this into a reader error
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
    if (refused_elements > 0 && std::strcmp(reader.errstr, "Out of memory") == 0)
        return fmt::format("an array of {} elements, more than any reply can have here ({})",
                           refused_elements, max_reply_elements);
    return reader.errstr;
}

}  // namespace redlock
