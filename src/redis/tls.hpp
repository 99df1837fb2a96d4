// TLS for rediss:// with OpenSSL, run non-blocking over our own socket: every step that needs
// the network reports what it waits for, and Socket waits for it under the caller's deadline and
// cancel descriptor, so that no handshake, read or write can outlive a lease.
#pragma once

#include <openssl/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "redis/tls_settings.hpp"

namespace redlock {

// What a TLS operation needs from the socket before it can go on.
enum class TlsWant { nothing, read, write };

// The client-side SSL_CTX built from the settings: minimum TLS 1.2, peer verification (unless
// insecure) against --cacert/--cacertdir or the system's CAs, and the client certificate.
class TlsContext {
  public:
    // Throws UsageError naming the option and file when a file is unreadable or not what it
    // should be (no certificate in it, a key that does not match the certificate, an encrypted
    // key). Reuses the last context built for the same settings: loading the system's CA bundle
    // takes milliseconds a reconnecting renewal should not spend.
    static std::shared_ptr<const TlsContext> get(const TlsSettings& settings);

    explicit TlsContext(const TlsSettings& settings);
    SSL_CTX* native() const { return ctx_.get(); }
    const TlsSettings& settings() const { return settings_; }

  private:
    struct Deleter {
        void operator()(SSL_CTX* ctx) const;
    };
    TlsSettings settings_;
    std::unique_ptr<SSL_CTX, Deleter> ctx_;
};

// One TLS session over a connected, non-blocking descriptor that the caller owns and keeps open
// for the session's lifetime. Not movable: OpenSSL's I/O callbacks hold its address.
class TlsStream {
  public:
    // `host` is the URL's host: checked against the certificate, and sent as SNI when it is a
    // name (RFC 6066 forbids IP literals there). `peer` names the endpoint in messages.
    TlsStream(std::shared_ptr<const TlsContext> context, int fd, const std::string& host,
              std::string peer);
    TlsStream(const TlsStream&) = delete;
    TlsStream& operator=(const TlsStream&) = delete;
    ~TlsStream();  // sends close_notify if it can do so without waiting

    // Advances the handshake; TlsWant::nothing once it is complete. Throws TlsError when
    // verification or negotiation fails, RedisUnavailable when the connection drops.
    TlsWant handshake();

    struct Io {
        std::size_t bytes = 0;  // > 0 when want is nothing
        TlsWant want = TlsWant::nothing;
    };
    Io read(char* buf, std::size_t len);
    Io write(const char* data, std::size_t len);

    // The socket's last errno as our I/O callbacks saw it (OpenSSL may clobber errno).
    struct Transport {
        int fd = -1;
        int error = 0;
    };

  private:
    struct SslDeleter {
        void operator()(SSL* ssl) const;
    };
    // Maps the SSL_get_error() of a failed call to a want, or throws.
    TlsWant failed(int error);

    std::shared_ptr<const TlsContext> context_;
    Transport transport_;
    std::string host_;
    std::string peer_;
    bool established_ = false;
    bool broken_ = false;  // after a fatal error OpenSSL forbids SSL_shutdown
    std::unique_ptr<SSL, SslDeleter> ssl_;
};

// True for an IPv4 or IPv6 literal (without brackets), which is verified as an IP address.
bool is_ip_literal(const std::string& host);

}  // namespace redlock
