#include "script.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include "log.hpp"

namespace redlock {

namespace scripts_src {
extern const char* const acquire_lua;
extern const char* const renew_lua;
extern const char* const release_lua;
extern const char* const status_lua;
extern const char* const force_release_lua;
extern const char* const abandon_lua;
extern const char* const raise_fence_lua;
}  // namespace scripts_src

namespace {

std::string sha1_hex(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha1(), nullptr);
    std::string hex;
    for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
    return hex;
}

}  // namespace

Script::Script(std::string_view name, std::string_view body)
    : name_(name), body_(body), sha1_(sha1_hex(body)) {}

Reply Script::run(Connection& conn, const std::vector<std::string>& keys,
                  const std::vector<std::string>& args, Deadline deadline) const {
    std::vector<std::string> argv{"EVALSHA", sha1_, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    Reply reply = conn.command(argv, deadline);
    if (!error_text(*reply).starts_with("NOSCRIPT")) return reply;
    log::verbose("{} script not cached on {}; sending it with EVAL", name_,
                 conn.endpoint().describe());
    argv[0] = "EVAL";
    argv[1] = body_;
    return conn.command(argv, deadline);
}

namespace scripts {
const Script& acquire() {
    static const Script s("acquire", scripts_src::acquire_lua);
    return s;
}
const Script& renew() {
    static const Script s("renew", scripts_src::renew_lua);
    return s;
}
const Script& release() {
    static const Script s("release", scripts_src::release_lua);
    return s;
}
const Script& status() {
    static const Script s("status", scripts_src::status_lua);
    return s;
}
const Script& force_release() {
    static const Script s("force_release", scripts_src::force_release_lua);
    return s;
}
const Script& abandon() {
    static const Script s("abandon", scripts_src::abandon_lua);
    return s;
}
const Script& raise_fence() {
    static const Script s("raise_fence", scripts_src::raise_fence_lua);
    return s;
}
}  // namespace scripts

}  // namespace redlock
