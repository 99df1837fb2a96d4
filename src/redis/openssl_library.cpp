#include "redis/openssl_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <openssl/macros.h>
#include <openssl/opensslv.h>

#include "util/errors.hpp"

namespace redlock {
namespace {

// The soname the headers were written for: a libssl of another major version has another ABI.
constexpr const char* library_name = "libssl.so." OPENSSL_MSTR(OPENSSL_SHLIB_VERSION);

std::string loader_error() {
    const char* e = ::dlerror();
    return e ? e : "unknown error";
}

OpenSsl load() {
    ::dlerror();
    // RTLD_LOCAL: nothing loaded later may bind to OpenSSL's symbols by accident.
    void* handle = ::dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        throw TlsError(fmt::format("rediss:// needs OpenSSL's {}, which could not be loaded: {}",
                                   library_name, loader_error()));
    OpenSsl lib;
    // dlsym on libssl's handle also searches libcrypto, which libssl depends on.
#define REDLOCK_OPENSSL_RESOLVE(name)                                        \
    lib.name = reinterpret_cast<decltype(lib.name)>(::dlsym(handle, #name)); \
    if (!lib.name)                                                           \
        throw TlsError(                                                      \
            fmt::format("{} lacks the function {}: {}", library_name, #name, loader_error()));
    REDLOCK_OPENSSL_FUNCTIONS(REDLOCK_OPENSSL_RESOLVE)
#undef REDLOCK_OPENSSL_RESOLVE
    return lib;
}

}  // namespace

const OpenSsl& openssl() {
    // A throwing initialiser leaves it uninitialised, so a later call tries (and reports) again.
    static const OpenSsl lib = load();
    return lib;
}

}  // namespace redlock
