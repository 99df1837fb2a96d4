// libFuzzer target: parse_redis_url on any bytes. It must return an endpoint a socket could use
// (a host of 1-253 bytes and a port of 1-65535, or a socket path that fits sockaddr_un; the same
// for every cluster seed and every sentinel of a redis-sentinel:// URL) or throw
// UsageError with a short message that never quotes the password.
#include <sys/un.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "util/errors.hpp"
#include "redis/redis_url.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view url(reinterpret_cast<const char*>(data), size);
    try {
        redlock::Endpoint ep = redlock::parse_redis_url(url);
        auto usable = [](const std::string& host, int port) {
            return !host.empty() && host.size() <= 253 && port >= 1 && port <= 65535;
        };
        if (ep.is_sentinel()) {
            // The master's address comes from the sentinels later; each of them must be usable.
            if (ep.sentinels.empty()) std::abort();
            for (const auto& s : ep.sentinels)
                if (!usable(s.host, s.port)) std::abort();
        } else if (ep.is_unix()) {
            if (ep.socket_path.size() >= sizeof(sockaddr_un::sun_path)) std::abort();
        } else if (!usable(ep.host, ep.port)) {
            std::abort();
        }
        for (const auto& seed : ep.cluster_seeds)
            if (!usable(seed.host, seed.port)) std::abort();
        if (ep.db < 0) std::abort();
        (void)ep.describe();
    } catch (const redlock::UsageError& e) {
        std::string_view message(e.what());
        if (message.size() > 400) std::abort();
        // A password of a few characters could occur elsewhere in the URL by chance; one of
        // eight or more that shows up whole means the masking failed.
        auto scheme = url.find("://");
        auto at = url.rfind('@');
        if (scheme != std::string_view::npos && at != std::string_view::npos && at > scheme) {
            std::string_view userinfo = url.substr(scheme + 3, at - scheme - 3);
            auto colon = userinfo.find(':');
            if (colon != std::string_view::npos) {
                std::string_view password = userinfo.substr(colon + 1);
                // Only letters and digits: a password of "***" or "://" could be rebuilt by
                // the mask and the URL's own punctuation.
                bool plain = password.size() >= 8;
                for (char c : password)
                    if (!std::isalnum(static_cast<unsigned char>(c))) plain = false;
                if (plain && url.find(password) == url.rfind(password) &&
                    message.find(password) != std::string_view::npos)
                    std::abort();
            }
        }
    }
    return 0;
}
