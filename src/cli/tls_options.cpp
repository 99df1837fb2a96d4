#include "cli/tls_options.hpp"

#include <fmt/format.h>

#include <cctype>

#include "redis/tls.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {

void add_tls_options(OptionTable& t, TlsRawOptions& o) {
    t.group("TLS options (rediss://, rediss-sentinel://, rediss-cluster:// URLs)", [&] {
        t.option("--cacert FILE", o.cacert,
                 "Trust the CA certificates in FILE (PEM) instead of the system's",
                 "REDLOCK_TLS_CACERT");
        t.option("--cacertdir DIR", o.cacertdir,
                 "Trust the CA certificates in DIR (hashed with openssl rehash)",
                 "REDLOCK_TLS_CACERTDIR");
        t.option("--cert FILE", o.cert, "Client certificate (PEM) for servers that require one",
                 "REDLOCK_TLS_CERT");
        t.option("--key FILE", o.key, "Private key (unencrypted PEM) of the --cert certificate",
                 "REDLOCK_TLS_KEY");
        t.flag("--insecure", o.insecure,
               "Do not verify the server's certificate or host name (warns; for tests only)",
               "REDLOCK_TLS_INSECURE");
    });
}

namespace {

// `message` with each option that came from its variable named by the variable instead
// ("--cacert" but not "--cacertdir" for cacert): that is where the user must fix it.
std::string named_by_variables(std::string message,
                               const std::map<std::string, std::string>& from_env) {
    for (const auto& [key, variable] : from_env) {
        std::string option = "--" + key;
        for (std::size_t at = message.find(option); at != std::string::npos;
             at = message.find(option, at + 1)) {
            std::size_t end = at + option.size();
            bool whole =
                end == message.size() ||
                !(std::islower(static_cast<unsigned char>(message[end])) || message[end] == '-');
            if (!whole) continue;
            message.replace(at, option.size(), variable);
            at += variable.size() - 1;
        }
    }
    return message;
}

}  // namespace

void apply_tls_options(Endpoint& endpoint, const TlsRawOptions& o,
                       const std::set<std::string>& given,
                       const std::map<std::string, std::string>& from_env) {
    if (!endpoint.tls) {
        for (const char* name : {"cacert", "cacertdir", "cert", "key", "insecure"})
            if (given.contains(name))
                throw UsageError(fmt::format(
                    "--{} is for TLS, but the Redis URL is not rediss://, rediss-sentinel:// or "
                    "rediss-cluster:// (the connection would be plain text)",
                    name));
        return;
    }
    TlsSettings& s = *endpoint.tls;
    s.ca_file = o.cacert;
    s.ca_dir = o.cacertdir;
    s.cert_file = o.cert;
    s.key_file = o.key;
    s.insecure = o.insecure;
    try {
        TlsContext::get(s);
    } catch (const UsageError& e) {
        std::map<std::string, std::string> tls_vars;
        for (const char* name : {"cacert", "cacertdir", "cert", "key"})
            if (auto v = from_env.find(name); v != from_env.end()) tls_vars.insert(*v);
        if (tls_vars.empty()) throw;
        throw UsageError(named_by_variables(e.what(), tls_vars));
    }
    if (s.insecure)
        log::warning(
            "--insecure: the certificate of Redis at {} is not verified; anyone on the network "
            "path can pose as the server",
            endpoint.describe());
}

}  // namespace redlock
