// rediss:// without a Redis: URL parsing, the options' checks at start (files, pairs, plain URLs),
// the context's settings, and the deadline and cancel descriptor during a handshake with a peer
// that never answers or does not speak TLS.
#include "redis/tls.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <thread>

#include "../silent_server.hpp"
#include "cli/cli.hpp"
#include "redis/redis_url.hpp"
#include "redis/socket.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"

using namespace redlock;
using std::chrono::milliseconds;
namespace fs = std::filesystem;

namespace {

// A temporary directory with a self-signed certificate and its key, a second key that does not
// match, the same key encrypted, and a file that is not PEM at all.
struct Pki {
    fs::path dir;
    std::string cert, key, other_key, encrypted_key, junk;

    Pki() {
        std::string tmpl = (fs::temp_directory_path() / "redlock-tls-test.XXXXXX").string();
        dir = ::mkdtemp(tmpl.data());
        cert = (dir / "cert.pem").string();
        key = (dir / "key.pem").string();
        other_key = (dir / "other.pem").string();
        encrypted_key = (dir / "encrypted.pem").string();
        junk = (dir / "junk.pem").string();

        EVP_PKEY* pkey = EVP_EC_gen("P-256");
        EVP_PKEY* other = EVP_EC_gen("P-256");
        X509* x = X509_new();
        X509_set_version(x, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
        X509_gmtime_adj(X509_getm_notBefore(x), 0);
        X509_gmtime_adj(X509_getm_notAfter(x), 3600);
        X509_set_pubkey(x, pkey);
        X509_NAME* name = X509_get_subject_name(x);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   reinterpret_cast<const unsigned char*>("test"), -1, -1, 0);
        X509_set_issuer_name(x, name);
        X509_sign(x, pkey, EVP_sha256());

        write(cert, [&](FILE* f) { return PEM_write_X509(f, x); });
        write(key, [&](FILE* f) {
            return PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr);
        });
        write(other_key, [&](FILE* f) {
            return PEM_write_PrivateKey(f, other, nullptr, nullptr, 0, nullptr, nullptr);
        });
        write(encrypted_key, [&](FILE* f) {
            char pass[] = "secret";
            return PEM_write_PrivateKey(f, pkey, EVP_aes_128_cbc(), nullptr, 0, nullptr, pass);
        });
        std::ofstream(junk) << "not a certificate\n";
        X509_free(x);
        EVP_PKEY_free(pkey);
        EVP_PKEY_free(other);
    }
    ~Pki() { fs::remove_all(dir); }

    template <typename F>
    static void write(const std::string& path, F f) {
        FILE* out = std::fopen(path.c_str(), "w");
        ASSERT_NE(out, nullptr);
        EXPECT_EQ(f(out), 1) << path;
        std::fclose(out);
    }
};

TlsSettings with_ca(const std::string& ca) {
    TlsSettings s;
    s.ca_file = ca;
    return s;
}

void expect_usage_error(const TlsSettings& s, const std::string& needle) {
    try {
        TlsContext context(s);
        ADD_FAILURE() << "accepted; expected: " << needle;
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

using redlock_test::SilentServer;

Endpoint tls_loopback(int port) {
    Endpoint ep = parse_redis_url("rediss://127.0.0.1:" + std::to_string(port));
    ep.tls->insecure = true;  // never reached: these peers do not get as far as a certificate
    return ep;
}

long long ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start)
        .count();
}

// Every test starts without our TLS variables set.
class TlsCli : public ::testing::Test {
  protected:
    void SetUp() override { clear(); }
    void TearDown() override { clear(); }
    static void clear() {
        for (const char* v : {"REDLOCK_URL", "REDLOCK_TLS_CACERT", "REDLOCK_TLS_CACERTDIR",
                              "REDLOCK_TLS_CERT", "REDLOCK_TLS_KEY", "REDLOCK_TLS_INSECURE"})
            unsetenv(v);
    }
    static Invocation parse(std::initializer_list<std::string> words) {
        std::vector<std::string> args{"redlock-run"};
        args.insert(args.end(), words);
        return parse_command_line(args);
    }
    static void expect_usage_error(std::initializer_list<std::string> words,
                                   const std::string& needle) {
        try {
            parse(words);
            ADD_FAILURE() << "accepted; expected: " << needle;
        } catch (const UsageError& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    }
    Pki pki;
};

}  // namespace

TEST(TlsUrl, RedissIsARedisUrlWithTls) {
    Endpoint ep = parse_redis_url("rediss://bob:pw@redis.example:6380/3");
    ASSERT_TRUE(ep.tls);
    EXPECT_EQ(*ep.tls, TlsSettings{});
    EXPECT_EQ(ep.host, "redis.example");
    EXPECT_EQ(ep.port, 6380);
    EXPECT_EQ(ep.user, "bob");
    EXPECT_EQ(ep.password, "pw");
    EXPECT_EQ(ep.db, 3);

    Endpoint v6 = parse_redis_url("rediss://[::1]");
    ASSERT_TRUE(v6.tls);
    EXPECT_EQ(v6.host, "::1");
    EXPECT_EQ(v6.port, 6379);

    EXPECT_FALSE(parse_redis_url("redis://h").tls);
    EXPECT_FALSE(parse_redis_url("unix:///tmp/r.sock").tls);
    for (const char* bad :
         {"rediss://", "rediss://h:0", "rediss://h/x", "redisss://h", "rediss:/h"})
        EXPECT_THROW(parse_redis_url(bad), UsageError) << bad;
}

TEST(TlsUrl, IpLiteralsAreVerifiedAsAddressesNotNames) {
    for (const char* ip : {"127.0.0.1", "10.1.2.3", "::1", "fe80::1", "2001:db8::7"})
        EXPECT_TRUE(is_ip_literal(ip)) << ip;
    for (const char* name : {"localhost", "redis.example", "1.2.3", "[::1]", "", "10.0.0.1.nip.io"})
        EXPECT_FALSE(is_ip_literal(name)) << name;
}

TEST(TlsContextTest, VerifiesThePeerWithAtLeastTls12) {
    Pki pki;
    TlsContext strict(with_ca(pki.cert));
    EXPECT_EQ(SSL_CTX_get_min_proto_version(strict.native()), TLS1_2_VERSION);
    EXPECT_EQ(SSL_CTX_get_verify_mode(strict.native()), SSL_VERIFY_PEER);

    TlsSettings insecure;
    insecure.insecure = true;
    TlsContext lax(insecure);
    EXPECT_EQ(SSL_CTX_get_verify_mode(lax.native()), SSL_VERIFY_NONE);
    EXPECT_EQ(SSL_CTX_get_min_proto_version(lax.native()), TLS1_2_VERSION);
}

TEST(TlsContextTest, LoadsAClientCertificateAndItsKey) {
    Pki pki;
    TlsSettings s = with_ca(pki.cert);
    s.cert_file = pki.cert;
    s.key_file = pki.key;
    TlsContext context(s);
    EXPECT_NE(SSL_CTX_get0_certificate(context.native()), nullptr);
    EXPECT_NE(SSL_CTX_get0_privatekey(context.native()), nullptr);
}

TEST(TlsContextTest, BadFilesAreUsageErrorsNamingTheOptionAndFile) {
    Pki pki;
    std::string missing = (pki.dir / "missing.pem").string();
    expect_usage_error(with_ca(missing), "cannot read the --cacert file '" + missing +
                                             "': No such file or directory");
    expect_usage_error(with_ca(pki.junk), "the --cacert file '" + pki.junk + "' holds no usable");
    expect_usage_error(with_ca(pki.dir.string()), "is a directory");

    TlsSettings dir;
    dir.ca_dir = pki.cert;
    expect_usage_error(dir, "the --cacertdir '" + pki.cert + "' is not a directory");
    dir.ca_dir = missing;
    expect_usage_error(dir, "cannot read the --cacertdir directory");

    TlsSettings pair = with_ca(pki.cert);
    pair.cert_file = pki.cert;
    expect_usage_error(pair, "--cert needs --key");
    pair.cert_file.clear();
    pair.key_file = pki.key;
    expect_usage_error(pair, "--key needs --cert");

    pair.cert_file = pki.junk;
    expect_usage_error(pair, "the --cert file '" + pki.junk + "' holds no usable certificate");
    pair.cert_file = pki.cert;
    pair.key_file = missing;
    expect_usage_error(pair, "cannot read the --key file");
    pair.key_file = pki.other_key;
    expect_usage_error(pair, "does not match");
}

TEST(TlsContextTest, AnEncryptedKeyIsRefusedWithoutPromptingForAPassphrase) {
    Pki pki;
    TlsSettings s = with_ca(pki.cert);
    s.cert_file = pki.cert;
    s.key_file = pki.encrypted_key;
    // With a terminal on stdin OpenSSL's default would block on a prompt here.
    expect_usage_error(s, "it must be an unencrypted PEM key");
}

TEST(TlsContextTest, TheSameSettingsShareOneContext) {
    Pki pki;
    auto a = TlsContext::get(with_ca(pki.cert));
    auto b = TlsContext::get(with_ca(pki.cert));
    EXPECT_EQ(a, b);
    TlsSettings other = with_ca(pki.cert);
    other.insecure = true;
    EXPECT_NE(TlsContext::get(other), a);
}

TEST(TlsSocket, AHandshakeWithASilentPeerEndsAtTheDeadline) {
    SilentServer server;  // accepts (in the kernel) and never says a word
    auto start = std::chrono::steady_clock::now();
    try {
        Socket::connect(tls_loopback(server.port), BootClock::now() + milliseconds(300), -1);
        FAIL();
    } catch (const RedisUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("timed out while doing the TLS handshake"),
                  std::string::npos)
            << e.what();
    }
    long long took = ms_since(start);
    EXPECT_GE(took, 290);
    EXPECT_LT(took, 2000);
}

TEST(TlsSocket, TheCancelDescriptorAbortsAHandshake) {
    SilentServer server;
    Fd cancel(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    std::thread canceller([&] {
        std::this_thread::sleep_for(milliseconds(100));
        std::uint64_t one = 1;
        EXPECT_EQ(::write(cancel.get(), &one, sizeof one), 8);
    });
    auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(Socket::connect(tls_loopback(server.port), BootClock::now() + milliseconds(10'000),
                                 cancel.get()),
                 Cancelled);
    canceller.join();
    EXPECT_LT(ms_since(start), 5000);
}

TEST(TlsSocket, APeerThatAnswersInPlainTextIsATlsError) {
    SilentServer server;
    std::thread peer([&] {
        Fd conn(::accept(server.fd.get(), nullptr, nullptr));
        char buf[1024];
        [[maybe_unused]] ssize_t got = ::recv(conn.get(), buf, sizeof buf, 0);
        const char reply[] = "-ERR unknown command\r\n";
        [[maybe_unused]] ssize_t sent = ::send(conn.get(), reply, sizeof reply - 1, MSG_NOSIGNAL);
        std::this_thread::sleep_for(milliseconds(200));
    });
    try {
        Socket::connect(tls_loopback(server.port), BootClock::now() + milliseconds(5000), -1);
        ADD_FAILURE() << "handshake succeeded";
    } catch (const TlsError& e) {
        EXPECT_EQ(e.code(), exit_code::tls);
        std::string what = e.what();
        EXPECT_NE(what.find("TLS handshake with Redis at 127.0.0.1:"), std::string::npos) << what;
        EXPECT_NE(what.find("does not speak TLS"), std::string::npos) << what;
    }
    peer.join();
}

TEST(TlsSocket, APeerThatClosesDuringTheHandshakeIsUnavailable) {
    SilentServer server;
    std::thread peer([&] { Fd conn(::accept(server.fd.get(), nullptr, nullptr)); });
    try {
        Socket::connect(tls_loopback(server.port), BootClock::now() + milliseconds(5000), -1);
        ADD_FAILURE() << "handshake succeeded";
    } catch (const RedisUnavailable& e) {
        std::string what = e.what();
        EXPECT_TRUE(what.find("closed the connection during the TLS handshake") !=
                        std::string::npos ||
                    what.find("Connection reset by peer") != std::string::npos)
            << what;
    }
    peer.join();
}

TEST_F(TlsCli, OptionsAndVariablesFillTheEndpoint) {
    Invocation inv = parse({"-u", "rediss://localhost:6380", "--cacert", pki.cert, "--cert",
                            pki.cert, "--key", pki.key, "job", "true"});
    const Endpoint& ep = inv.run.conn.endpoint;
    ASSERT_TRUE(ep.tls);
    EXPECT_EQ(ep.tls->ca_file, pki.cert);
    EXPECT_EQ(ep.tls->cert_file, pki.cert);
    EXPECT_EQ(ep.tls->key_file, pki.key);
    EXPECT_FALSE(ep.tls->insecure);

    setenv("REDLOCK_URL", "rediss://localhost:6380", 1);
    setenv("REDLOCK_TLS_CACERTDIR", pki.dir.c_str(), 1);
    setenv("REDLOCK_TLS_CERT", pki.cert.c_str(), 1);
    setenv("REDLOCK_TLS_KEY", pki.key.c_str(), 1);
    setenv("REDLOCK_TLS_INSECURE", "yes", 1);
    const Endpoint& env = parse({"job", "true"}).run.conn.endpoint;
    ASSERT_TRUE(env.tls);
    EXPECT_EQ(env.tls->ca_dir, pki.dir.string());
    EXPECT_EQ(env.tls->cert_file, pki.cert);
    EXPECT_EQ(env.tls->key_file, pki.key);
    EXPECT_TRUE(env.tls->insecure);
}

TEST_F(TlsCli, EverySubcommandTakesTheTlsOptions) {
    for (std::initializer_list<std::string> words :
         {std::initializer_list<std::string>{"status", "--cacert", pki.cert, "-u", "rediss://h",
                                             "job"},
          {"list", "--cacert", pki.cert, "-u", "rediss://h"},
          {"release", "--force", "--cacert", pki.cert, "-u", "rediss://h", "job"},
          {"run", "--cacert", pki.cert, "-u", "rediss://h", "job", "true"}}) {
        Invocation inv = parse(words);
        const Endpoint& ep =
            inv.action == Action::run ? inv.run.conn.endpoint : inv.inspect.conn.endpoint;
        ASSERT_TRUE(ep.tls) << *words.begin();
        EXPECT_EQ(ep.tls->ca_file, pki.cert) << *words.begin();
    }
}

TEST_F(TlsCli, MistakesAreUsageErrorsAtStart) {
    expect_usage_error({"-u", "rediss://h", "--cert", pki.cert, "job", "true"},
                       "--cert needs --key");
    expect_usage_error({"-u", "rediss://h", "--key", pki.key, "job", "true"}, "--key needs --cert");
    expect_usage_error({"-u", "rediss://h", "--cacert", "/nonexistent/ca.pem", "job", "true"},
                       "cannot read the --cacert file '/nonexistent/ca.pem'");
    expect_usage_error({"status", "-u", "rediss://h", "--cacert", pki.junk, "job"},
                       "holds no usable CA certificate");
    // TLS options with a plain URL: the user meant TLS, and would send the password in clear.
    expect_usage_error({"-u", "redis://h", "--cacert", pki.cert, "job", "true"},
                       "--cacert is for TLS, but the Redis URL is not rediss://");
    expect_usage_error({"--insecure", "job", "true"}, "--insecure is for TLS");
    expect_usage_error(
        {"-u", "unix:///tmp/r.sock", "--cert", pki.cert, "--key", pki.key, "job", "true"},
        "--cert is for TLS");
}

TEST_F(TlsCli, TlsVariablesAreIgnoredForAPlainUrl) {
    // A crontab or a parent run may set them for other jobs; only a flag says "this one is TLS".
    setenv("REDLOCK_TLS_CACERT", pki.cert.c_str(), 1);
    setenv("REDLOCK_TLS_CERT", pki.cert.c_str(), 1);
    setenv("REDLOCK_TLS_INSECURE", "1", 1);
    EXPECT_FALSE(parse({"-u", "redis://h", "job", "true"}).run.conn.endpoint.tls);
    EXPECT_FALSE(parse({"status", "job"}).inspect.conn.endpoint.tls);
}
