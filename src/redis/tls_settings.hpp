// How a rediss:// connection authenticates the server and itself: the files and switches given
// with --cacert, --cacertdir, --cert, --key and --insecure. Plain data, so that the URL and the
// options can carry it without pulling in OpenSSL.
#pragma once

#include <string>

namespace redlock {

struct TlsSettings {
    std::string ca_file;    // trusted CAs (PEM); with ca_dir empty too, the system's defaults
    std::string ca_dir;     // a directory of hashed CA certificates (openssl rehash)
    std::string cert_file;  // client certificate chain (PEM) for mutual TLS
    std::string key_file;   // its private key (PEM, unencrypted)
    bool insecure = false;  // skip certificate and host name verification

    bool operator==(const TlsSettings&) const = default;
};

}  // namespace redlock
