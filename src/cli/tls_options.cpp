#include "cli/tls_options.hpp"

#include <fmt/format.h>

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

void apply_tls_options(Endpoint& endpoint, const TlsRawOptions& o,
                       const std::set<std::string>& given) {
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
    TlsContext::get(s);
    if (s.insecure)
        log::warning(
            "--insecure: the certificate of Redis at {} is not verified; anyone on the network "
            "path can pose as the server",
            endpoint.describe());
}

}  // namespace redlock
