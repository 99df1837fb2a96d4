// URL lists (REDLOCK_URL="redis://a,redis://b,..."): a password never splits a list, and no
// error about a list ever quotes a password, however it is written.
#include "redis/url_list.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redis/redis_url.hpp"
#include "util/errors.hpp"

using redlock::parse_listed_url;
using redlock::split_url_list;
using redlock::UsageError;

TEST(UrlList, APasswordHoldingCommaSchemeDoesNotSplitTheUrl) {
    auto urls = split_url_list({"redis://u:se,redis://cret@h:6380"});
    ASSERT_EQ(urls.size(), 1u);
    EXPECT_EQ(urls[0], "redis://u:se,redis://cret@h:6380");
    // A list whose first URL is whole is still a list.
    EXPECT_EQ(split_url_list({"redis://a:1,redis://u:p@b:2,redis://c"}).size(), 3u);
}

// Every error about any of these values, as the CLI makes them: split, then parse each URL.
std::string errors_for(const std::string& value) {
    std::string all;
    auto urls = split_url_list({value});
    for (const auto& url : urls) {
        try {
            (void)parse_listed_url(url, urls.size() > 1);
        } catch (const UsageError& e) {
            all += e.what();
            all += '\n';
        }
    }
    return all;
}

TEST(UrlList, NoErrorEverQuotesThePassword) {
    const std::string secret = "Sx9qTz";
    const std::vector<std::string> passwords{
        secret + ",redis://" + secret,   secret + ",redis://h2," + secret,
        secret + "@" + secret,           secret + "%" + secret,
        secret + "%zz" + secret,         secret + "\n" + secret,
        secret + ",redis://x@" + secret, secret + "/" + secret,
        secret + ",unix:///" + secret,   secret + "%00" + secret,
    };
    for (const auto& password : passwords) {
        for (const std::string& value :
             {"redis://u:" + password + "@h:99999", "redis://u:" + password + "@h",
              "redis://a:1,redis://u:" + password + "@h,redis://c",
              "redis://a:1,redis://u:" + password + "@h:0,redis://c",
              "redis-cluster://u:" + password + "@h1,h2", "redis://:" + password + "@[::1%zz]"}) {
            std::string errors = errors_for(value);
            EXPECT_EQ(errors.find(secret), std::string::npos) << value << "\n" << errors;
        }
    }
}

TEST(UrlList, AnErrorInAListMasksTheUserNameToo) {
    try {
        (void)parse_listed_url("redis://piece@h:99999", true);
        FAIL();
    } catch (const UsageError& e) {
        std::string what = e.what();
        EXPECT_EQ(what.find("piece"), std::string::npos) << what;
        EXPECT_NE(what.find("redis://***@h:99999"), std::string::npos) << what;
        EXPECT_NE(what.find("port must be 1-65535"), std::string::npos) << what;
    }
}
