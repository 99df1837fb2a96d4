// OpenSSL, loaded with dlopen the first time a rediss:// connection needs it. Linking libssl and
// libcrypto made every run pay for them at start-up (about 25,000 relocations, a millisecond and
// 2 MB of resident memory) although most runs speak plain TCP; now only TLS runs do.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace redlock {

// Every OpenSSL function tls.cpp calls. Macros such as SSL_set_mode expand to one of these
// (SSL_ctrl, BIO_set_flags), so tls.cpp spells those out through the table too.
#define REDLOCK_OPENSSL_FUNCTIONS(X)      \
    X(OPENSSL_init_ssl)                   \
    X(TLS_client_method)                  \
    X(SSL_CTX_new)                        \
    X(SSL_CTX_free)                       \
    X(SSL_CTX_ctrl)                       \
    X(SSL_CTX_set_default_passwd_cb)      \
    X(SSL_CTX_set_default_verify_paths)   \
    X(SSL_CTX_load_verify_locations)      \
    X(SSL_CTX_use_certificate_chain_file) \
    X(SSL_CTX_use_PrivateKey_file)        \
    X(SSL_CTX_check_private_key)          \
    X(SSL_CTX_set_verify)                 \
    X(SSL_new)                            \
    X(SSL_free)                           \
    X(SSL_set_bio)                        \
    X(SSL_set_connect_state)              \
    X(SSL_ctrl)                           \
    X(SSL_get0_param)                     \
    X(SSL_connect)                        \
    X(SSL_read_ex)                        \
    X(SSL_write_ex)                       \
    X(SSL_shutdown)                       \
    X(SSL_get_error)                      \
    X(SSL_get_verify_result)              \
    X(X509_VERIFY_PARAM_set1_host)        \
    X(X509_VERIFY_PARAM_set1_ip_asc)      \
    X(X509_VERIFY_PARAM_set_hostflags)    \
    X(X509_verify_cert_error_string)      \
    X(BIO_new)                            \
    X(BIO_get_data)                       \
    X(BIO_set_data)                       \
    X(BIO_set_init)                       \
    X(BIO_set_flags)                      \
    X(BIO_clear_flags)                    \
    X(BIO_get_new_index)                  \
    X(BIO_meth_new)                       \
    X(BIO_meth_free)                      \
    X(BIO_meth_set_write_ex)              \
    X(BIO_meth_set_read_ex)               \
    X(BIO_meth_set_ctrl)                  \
    X(BIO_meth_set_create)                \
    X(ERR_peek_error)                     \
    X(ERR_clear_error)                    \
    X(ERR_reason_error_string)            \
    X(ERR_error_string_n)

// Pointers typed from OpenSSL's own declarations, so a call through them is checked by the
// compiler exactly like a direct call.
struct OpenSsl {
#define REDLOCK_OPENSSL_POINTER(name) decltype(&::name) name = nullptr;
    REDLOCK_OPENSSL_FUNCTIONS(REDLOCK_OPENSSL_POINTER)
#undef REDLOCK_OPENSSL_POINTER
};

// Loads libssl (and with it libcrypto) once per process and never unloads it: OpenSSL's exit
// handlers live in it. Throws TlsError (exit 78) naming the library and the loader's reason when
// it is missing or lacks a function, which a TLS connection cannot do without.
const OpenSsl& openssl();

}  // namespace redlock
