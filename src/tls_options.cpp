#include "tls_options.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "errors.hpp"
#include "log.hpp"
#include "tls.hpp"

namespace redlock {

void add_tls_options(CLI::App& app, TlsRawOptions& o) {
    const std::string group = "TLS options (rediss:// URLs)";
    app.add_option("--cacert", o.cacert,
                   "Trust the CA certificates in FILE (PEM) instead of the system's")
        ->envname("REDLOCK_TLS_CACERT")
        ->group(group);
    app.add_option("--cacertdir", o.cacertdir,
                   "Trust the CA certificates in DIR (hashed with openssl rehash)")
        ->envname("REDLOCK_TLS_CACERTDIR")
        ->group(group);
    app.add_option("--cert", o.cert, "Client certificate (PEM) for servers that require one")
        ->envname("REDLOCK_TLS_CERT")
        ->group(group);
    app.add_option("--key", o.key, "Private key (unencrypted PEM) of the --cert certificate")
        ->envname("REDLOCK_TLS_KEY")
        ->group(group);
    app.add_flag("--insecure", o.insecure,
                 "Do not verify the server's certificate or host name (warns; for tests only)")
        ->envname("REDLOCK_TLS_INSECURE")
        ->group(group);
}

void apply_tls_options(Endpoint& endpoint, const TlsRawOptions& o,
                       const std::set<std::string>& given) {
    if (!endpoint.tls) {
        for (const char* name : {"cacert", "cacertdir", "cert", "key", "insecure"})
            if (given.contains(name))
                throw UsageError(fmt::format(
                    "--{} is for TLS, but the Redis URL is not rediss:// (the connection would be "
                    "plain text)",
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
