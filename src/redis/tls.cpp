#include "redis/tls.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "redis/openssl_library.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"
#include "util/regular_file.hpp"

namespace redlock {
namespace {

// The first error on this thread's OpenSSL queue, as its reason text ("wrong version number"),
// and the queue emptied: errors left behind would be blamed on the next call on this thread.
std::string take_openssl_error() {
    unsigned long e = openssl().ERR_peek_error();
    std::string text;
    if (e == 0) {
        text = "unknown TLS error";
    } else if (const char* reason = openssl().ERR_reason_error_string(e)) {
        text = reason;
    } else {
        char buf[256];
        openssl().ERR_error_string_n(e, buf, sizeof buf);
        text = buf;
    }
    openssl().ERR_clear_error();
    return text;
}

// Checked before OpenSSL sees the file, so that a typo gets the system's own words for it.
void require_file(const std::string& path, const char* option) {
    open_regular_file(path, fmt::format("{} file", option));
}

void require_directory(const std::string& path, const char* option) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw UsageError(fmt::format("cannot read the {} directory '{}': {}", option, path,
                                     std::strerror(errno)));
    if (!S_ISDIR(st.st_mode))
        throw UsageError(fmt::format("the {} '{}' is not a directory", option, path));
    if (::access(path.c_str(), R_OK | X_OK) != 0)
        throw UsageError(fmt::format("cannot read the {} directory '{}': {}", option, path,
                                     std::strerror(errno)));
}

// OpenSSL would otherwise prompt on the terminal for an encrypted key's passphrase, which a cron
// job cannot answer; refusing makes the load fail with a message instead.
int no_passphrase(char*, int, int, void*) {
    return 0;
}

// Our own BIO over the socket instead of OpenSSL's socket BIO: send(2) with MSG_NOSIGNAL, because
// a write to a connection the server closed must fail with EPIPE, not kill us with SIGPIPE (status,
// list and release do not block it), and errno kept where OpenSSL cannot clobber it.
int bio_write(BIO* bio, const char* data, std::size_t len, std::size_t* written) {
    auto* t = static_cast<TlsStream::Transport*>(openssl().BIO_get_data(bio));
    openssl().BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
    for (;;) {
        ssize_t n = ::send(t->fd, data, len, MSG_NOSIGNAL);
        if (n >= 0) {
            *written = static_cast<std::size_t>(n);
            return 1;
        }
        if (errno == EINTR) continue;
        t->error = errno;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            openssl().BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY);
        return 0;
    }
}

int bio_read(BIO* bio, char* buf, std::size_t len, std::size_t* read) {
    auto* t = static_cast<TlsStream::Transport*>(openssl().BIO_get_data(bio));
    openssl().BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
    for (;;) {
        ssize_t n = ::recv(t->fd, buf, len, 0);
        if (n > 0) {
            *read = static_cast<std::size_t>(n);
            return 1;
        }
        if (n == 0) {  // end of stream: no retry flag, OpenSSL reports it as EOF
            t->error = 0;
            *read = 0;
            return 0;
        }
        if (errno == EINTR) continue;
        t->error = errno;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            openssl().BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY);
        return 0;
    }
}

long bio_ctrl(BIO*, int cmd, long, void*) {
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;  // nothing is buffered here
}

int bio_create(BIO* bio) {
    openssl().BIO_set_init(bio, 1);
    return 1;
}

struct BioMethodDeleter {
    void operator()(BIO_METHOD* m) const { openssl().BIO_meth_free(m); }
};

const BIO_METHOD* socket_bio_method() {
    // Created after OpenSSL's initialisation (an SSL exists by now), so freed before its cleanup.
    static const std::unique_ptr<BIO_METHOD, BioMethodDeleter> method = [] {
        std::unique_ptr<BIO_METHOD, BioMethodDeleter> m(openssl().BIO_meth_new(
            openssl().BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "redlock-run socket"));
        if (!m || !openssl().BIO_meth_set_write_ex(m.get(), bio_write) ||
            !openssl().BIO_meth_set_read_ex(m.get(), bio_read) ||
            !openssl().BIO_meth_set_ctrl(m.get(), bio_ctrl) ||
            !openssl().BIO_meth_set_create(m.get(), bio_create))
            throw std::bad_alloc();
        return m;
    }();
    return method.get();
}

// What went wrong in a certificate check, in OpenSSL's words, with the one hint that helps.
std::string verify_failure(long result, const std::string& host) {
    std::string text = fmt::format("certificate verify failed: {}",
                                   openssl().X509_verify_cert_error_string(result));
    switch (result) {
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            return fmt::format("{} (the certificate is not for '{}')", text, host);
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
            return text + " (give the server's CA with --cacert)";
        default:
            return text;
    }
}

}  // namespace

bool is_ip_literal(const std::string& host) {
    unsigned char buf[sizeof(in6_addr)];
    return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
           inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

void TlsContext::Deleter::operator()(SSL_CTX* ctx) const {
    openssl().SSL_CTX_free(ctx);
}

TlsContext::TlsContext(const TlsSettings& settings)
    : settings_(settings), ctx_(openssl().SSL_CTX_new(openssl().TLS_client_method())) {
    if (!ctx_) throw Error("cannot set up TLS: " + take_openssl_error(), exit_code::internal);
    if (settings.cert_file.empty() != settings.key_file.empty())
        throw UsageError(settings.cert_file.empty() ? "--key needs --cert (the client certificate)"
                                                    : "--cert needs --key (its private key)");
    SSL_CTX* ctx = ctx_.get();
    // TLS 1.0 and 1.1 are broken and Redis 6+ never needs them.
    openssl().SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
    openssl().SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);

    if (!settings.ca_file.empty()) require_file(settings.ca_file, "--cacert");
    if (!settings.ca_dir.empty()) require_directory(settings.ca_dir, "--cacertdir");
    if (settings.insecure && settings.ca_file.empty() && settings.ca_dir.empty()) {
        // Nothing to verify against: skip the system bundle, which takes ~100ms to parse.
    } else if (settings.ca_file.empty() && settings.ca_dir.empty()) {
        if (openssl().SSL_CTX_set_default_verify_paths(ctx) != 1)
            throw Error("cannot load the system's CA certificates: " + take_openssl_error(),
                        exit_code::internal);
    } else if (openssl().SSL_CTX_load_verify_locations(
                   ctx, settings.ca_file.empty() ? nullptr : settings.ca_file.c_str(),
                   settings.ca_dir.empty() ? nullptr : settings.ca_dir.c_str()) != 1) {
        throw UsageError(
            settings.ca_file.empty()
                ? fmt::format("cannot use the --cacertdir '{}': {}", settings.ca_dir,
                              take_openssl_error())
                : fmt::format("the --cacert file '{}' holds no usable CA certificate: {}",
                              settings.ca_file, take_openssl_error()));
    }

    if (!settings.cert_file.empty()) {
        require_file(settings.cert_file, "--cert");
        require_file(settings.key_file, "--key");
        if (openssl().SSL_CTX_use_certificate_chain_file(ctx, settings.cert_file.c_str()) != 1)
            throw UsageError(fmt::format("the --cert file '{}' holds no usable certificate: {}",
                                         settings.cert_file, take_openssl_error()));
        auto mismatch = [&] {
            return UsageError(
                fmt::format("the --key file '{}' does not match the certificate in '{}': {}",
                            settings.key_file, settings.cert_file, take_openssl_error()));
        };
        if (openssl().SSL_CTX_use_PrivateKey_file(ctx, settings.key_file.c_str(),
                                                  SSL_FILETYPE_PEM) != 1) {
            if (ERR_GET_LIB(openssl().ERR_peek_error()) == ERR_LIB_X509 &&
                ERR_GET_REASON(openssl().ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH)
                throw mismatch();
            throw UsageError(fmt::format(
                "cannot load the private key in the --key file '{}' (it must be an unencrypted "
                "PEM key): {}",
                settings.key_file, take_openssl_error()));
        }
        if (openssl().SSL_CTX_check_private_key(ctx) != 1) throw mismatch();
    }
    openssl().SSL_CTX_set_verify(ctx, settings.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                                 nullptr);
}

std::shared_ptr<const TlsContext> TlsContext::get(const TlsSettings& settings) {
    // OpenSSL frees its globals in an atexit handler it registers on first use. Initialising it
    // before `last` exists makes `last` (registered later) go first at exit, while OpenSSL works.
    [[maybe_unused]] static const bool initialised = openssl().OPENSSL_init_ssl(0, nullptr) == 1;
    static std::mutex mutex;
    static std::shared_ptr<const TlsContext> last;
    std::lock_guard lock(mutex);
    if (!last || last->settings() != settings) last = std::make_shared<const TlsContext>(settings);
    return last;
}

void TlsStream::SslDeleter::operator()(SSL* ssl) const {
    openssl().SSL_free(ssl);  // also frees the BIO it owns
}

TlsStream::TlsStream(std::shared_ptr<const TlsContext> context, int fd, const std::string& host,
                     std::string peer)
    : context_(std::move(context)),
      transport_{fd, 0},
      host_(host),
      peer_(std::move(peer)),
      ssl_(openssl().SSL_new(context_->native())) {
    auto setup_failed = [&] {
        return Error("cannot set up TLS: " + take_openssl_error(), exit_code::internal);
    };
    if (!ssl_) throw setup_failed();
    BIO* bio = openssl().BIO_new(socket_bio_method());
    if (!bio) throw setup_failed();
    openssl().BIO_set_data(bio, &transport_);
    openssl().SSL_set_bio(ssl_.get(), bio, bio);  // the SSL owns the BIO from here on
    openssl().SSL_set_connect_state(ssl_.get());
    // Retrying a write after WANT_WRITE with the rest of the buffer is how Socket::write_all works.
    openssl().SSL_ctrl(ssl_.get(), SSL_CTRL_MODE,
                       SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
                       nullptr);

    bool ip = is_ip_literal(host);
    if (!ip && openssl().SSL_ctrl(ssl_.get(), SSL_CTRL_SET_TLSEXT_HOSTNAME,
                                  TLSEXT_NAMETYPE_host_name, const_cast<char*>(host.c_str())) != 1)
        throw setup_failed();
    if (!context_->settings().insecure) {
        X509_VERIFY_PARAM* param = openssl().SSL_get0_param(ssl_.get());
        int ok = ip ? openssl().X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                    : openssl().X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
        if (ok != 1) throw setup_failed();
        openssl().X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
}

TlsStream::~TlsStream() {
    // One non-blocking attempt: a courtesy to the server, never worth waiting for.
    if (established_ && !broken_) {
        openssl().SSL_shutdown(ssl_.get());
        openssl().ERR_clear_error();
    }
}

TlsWant TlsStream::handshake() {
    openssl().ERR_clear_error();
    int ret = openssl().SSL_connect(ssl_.get());
    if (ret == 1) {
        established_ = true;
        return TlsWant::nothing;
    }
    return failed(openssl().SSL_get_error(ssl_.get(), ret));
}

TlsStream::Io TlsStream::read(char* buf, std::size_t len) {
    openssl().ERR_clear_error();
    std::size_t n = 0;
    int ret = openssl().SSL_read_ex(ssl_.get(), buf, len, &n);
    if (ret == 1) return {n, TlsWant::nothing};
    return {0, failed(openssl().SSL_get_error(ssl_.get(), ret))};
}

TlsStream::Io TlsStream::write(const char* data, std::size_t len) {
    openssl().ERR_clear_error();
    std::size_t n = 0;
    int ret = openssl().SSL_write_ex(ssl_.get(), data, len, &n);
    if (ret == 1) return {n, TlsWant::nothing};
    int error = openssl().SSL_get_error(ssl_.get(), ret);
    if (error == SSL_ERROR_SYSCALL && established_ && transport_.error != 0) {
        // In TLS 1.3 our handshake ends before the server has checked our certificate. A server
        // that refuses it sends an alert and closes; our first write then meets a reset, and the
        // alert that says why is already waiting in the receive buffer: read it.
        int transport_error = transport_.error;
        openssl().ERR_clear_error();
        char scratch[256];
        std::size_t got = 0;
        int r = openssl().SSL_read_ex(ssl_.get(), scratch, sizeof scratch, &got);
        if (r != 1 && openssl().SSL_get_error(ssl_.get(), r) == SSL_ERROR_SSL)
            failed(SSL_ERROR_SSL);
        openssl().ERR_clear_error();
        transport_.error = transport_error;
    }
    return {0, failed(error)};
}

TlsWant TlsStream::failed(int error) {
    if (error == SSL_ERROR_WANT_READ) return TlsWant::read;
    if (error == SSL_ERROR_WANT_WRITE) return TlsWant::write;
    broken_ = true;
    const bool in_handshake = !established_;
    auto closed = [&] {
        openssl().ERR_clear_error();
        return RedisUnavailable(fmt::format("Redis at {} closed the connection{}", peer_,
                                            in_handshake ? " during the TLS handshake" : ""));
    };
    if (error == SSL_ERROR_ZERO_RETURN) throw closed();
    if (error == SSL_ERROR_SYSCALL) {
        if (transport_.error == 0) throw closed();
        openssl().ERR_clear_error();
        throw RedisUnavailable(fmt::format("lost the connection to Redis at {}: {}", peer_,
                                           std::strerror(transport_.error)));
    }
    unsigned long e = openssl().ERR_peek_error();
    if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        throw closed();
    std::string detail;
    if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
        detail = verify_failure(openssl().SSL_get_verify_result(ssl_.get()), host_);
        openssl().ERR_clear_error();
    } else {
        detail = take_openssl_error();
        if (ERR_GET_LIB(e) == ERR_LIB_SSL && (ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER ||
                                              ERR_GET_REASON(e) == SSL_R_PACKET_LENGTH_TOO_LONG))
            detail += " (the server does not speak TLS on this port? use redis://)";
        if (ERR_GET_LIB(e) == ERR_LIB_SSL && context_->settings().cert_file.empty()) {
            if (ERR_GET_REASON(e) == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED)
                detail += " (the server wants a client certificate: give --cert and --key)";
            else if (ERR_GET_REASON(e) == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE)
                detail += " (does the server want a client certificate? give --cert and --key)";
        }
    }
    if (in_handshake)
        throw TlsError(fmt::format("TLS handshake with Redis at {} failed: {}", peer_, detail));
    throw TlsError(fmt::format("TLS error from Redis at {}: {}", peer_, detail));
}

}  // namespace redlock
