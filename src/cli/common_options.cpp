#include "cli/common_options.hpp"

#include <fmt/format.h>

#include <optional>

#include "redis/secrets.hpp"
#include "redis/url_list.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/log.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

void add_connection_options(OptionTable& t, CommonRawOptions& o);

}  // namespace

void add_common_options(OptionTable& t, CommonRawOptions& o) {
    t.flag("-h,--help", o.help, "Show the everyday options and exit");
    t.flag("--help-all", o.help_all, "Show every option and exit");
    t.flag("-V,--version", o.version, "Show the version and exit");
    t.group("Connection options", [&] { add_connection_options(t, o); });
    add_tls_options(t, o.tls);
}

namespace {

void add_connection_options(OptionTable& t, CommonRawOptions& o) {
    t.option("-u,--url URL", o.urls,
             "Redis to use: redis://[user[:password]@]host[:port][/db] or "
             "unix:///path.sock[?db=N] (default redis://127.0.0.1:6379); Sentinel: "
             "redis-sentinel://host[:port],.../MASTER[/db]; Cluster: "
             "redis-cluster://host:port,...; rediss://, rediss-sentinel:// and "
             "rediss-cluster:// for TLS; given 3 or more times (or REDLOCK_URL=URL,URL,...): "
             "a Redlock quorum of independent masters",
             "REDLOCK_URL");
    t.option("--node-timeout DURATION", o.node_timeout,
             "Quorum mode: bound on each node's connect and command (default 50ms, raised to "
             "follow a distant node's round trip)",
             "REDLOCK_NODE_TIMEOUT");
    t.option("--password-file FILE", o.password_file,
             "Read the Redis password from the first line of FILE (else the URL's, "
             "REDLOCK_PASSWORD or REDISCLI_AUTH)",
             "REDLOCK_PASSWORD_FILE");
    t.option("--sentinel-password-file FILE", o.sentinel_password_file,
             "With a redis-sentinel:// URL: the sentinels' password, from the first line "
             "of FILE (the URL's password is the master's)",
             "REDLOCK_SENTINEL_PASSWORD_FILE");
    t.option("--sentinel-user USER", o.sentinel_user,
             "With --sentinel-password-file: the sentinels' ACL user (else the default user)",
             "REDLOCK_SENTINEL_USER");
    t.option("--prefix PREFIX", o.prefix, "Prepend PREFIX to NAME to form the Redis key",
             "REDLOCK_PREFIX");
    t.option("--connect-timeout DURATION", o.connect_timeout,
             "Give up connecting to Redis after DURATION (default 2s)", "REDLOCK_CONNECT_TIMEOUT");
    t.option("--command-timeout DURATION", o.command_timeout,
             "Give up on any Redis command after DURATION (default 2s)", "REDLOCK_COMMAND_TIMEOUT");
    t.flag("-v,--verbose", o.verbose, "Report acquire, renew and release with timings",
           "REDLOCK_VERBOSE");
}

}  // namespace

Millis duration_option(const std::string& text, const std::string& option) {
    return parse_duration(text, option);
}

int int_option(const std::string& text, const std::string& option, int min, int max) {
    std::optional<long long> v = parse_integer(text, min, max);
    if (!v)
        throw UsageError(fmt::format("invalid value '{}' for {}: expected {}-{}", excerpt(text),
                                     option, min, max));
    return static_cast<int>(*v);
}

ConnectionOptions connection_options(const CommonRawOptions& raw, const Scan& scan) {
    ConnectionOptions c;
    std::vector<std::string> urls = split_url_list(raw.urls);
    if (urls.empty()) urls.push_back(raw.url);
    // A value from the environment is named by its variable in a refusal: that is where the
    // user must fix it.
    auto from_env = [&](const char* key) {
        return scan.from_env.contains(key) ? scan.label(key) : std::string();
    };
    check_node_count(urls.size(), from_env("url"));
    std::vector<Endpoint> endpoints;
    for (const std::string& url : urls)
        endpoints.push_back(parse_listed_url(url, urls.size() > 1, from_env("url")));
    std::optional<std::string> file_password;
    if (!raw.password_file.empty())
        file_password = read_password_file(raw.password_file, from_env("password-file"));
    for (Endpoint& endpoint : endpoints) {
        c.endpoint = std::move(endpoint);
        apply_tls_options(c.endpoint, raw.tls, scan.given, scan.from_env);
        if (c.endpoint.password && scan.given.contains("url"))
            log::warning(
                "the password in --url is visible to other users in ps; use REDISCLI_AUTH or "
                "--password-file instead");
        if (file_password) {
            c.endpoint.password = file_password;
            c.endpoint.password_source =
                fmt::format("{} '{}'", scan.label("password-file"), raw.password_file);
        } else {
            c.endpoint.password =
                resolve_password("", c.endpoint.password, &c.endpoint.password_source);
        }
        if (urls.size() > 1) c.quorum.push_back(c.endpoint);
    }
    if (!c.quorum.empty()) c.endpoint = c.quorum.front();
    c.endpoint.is_default = !scan.given.contains("url") && !scan.from_env.contains("url");
    c.node_timeout = duration_option(raw.node_timeout, scan.label("node-timeout"));
    c.node_timeout_given =
        scan.given.contains("node-timeout") || scan.from_env.contains("node-timeout");
    if (!raw.sentinel_password_file.empty()) {
        if (!c.endpoint.is_sentinel())
            throw UsageError(fmt::format("{} needs a redis-sentinel:// URL",
                                         scan.label("sentinel-password-file")));
        c.endpoint.sentinel_password =
            read_password_file(raw.sentinel_password_file, from_env("sentinel-password-file"));
    }
    if (!raw.sentinel_user.empty()) {
        // A user without a password would be sent nowhere: Redis has no AUTH with a user alone.
        if (!c.endpoint.sentinel_password)
            throw UsageError(
                fmt::format("{} needs --sentinel-password-file", scan.label("sentinel-user")));
        c.endpoint.sentinel_user = raw.sentinel_user;
    }
    c.timeouts.connect = duration_option(raw.connect_timeout, scan.label("connect-timeout"));
    c.timeouts.command = duration_option(raw.command_timeout, scan.label("command-timeout"));
    c.prefix = raw.prefix;
    c.verbose = raw.verbose;
    return c;
}

}  // namespace redlock
