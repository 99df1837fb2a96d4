#include "lock/node/holder.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include "util/syslog_sink.hpp"

using namespace redlock;

TEST(Holder, CommandLineIsJoinedWithSpaces) {
    EXPECT_EQ(command_line_summary({"sh", "-c", "echo hi"}, 1024), "sh -c echo hi");
}

TEST(Holder, LongCommandLineIsCutWithEllipsis) {
    std::string s = command_line_summary({std::string(3000, 'x')}, 1024);
    EXPECT_EQ(s.size(), 1024u);
    EXPECT_EQ(s.substr(1021), "...");
}

TEST(Holder, CutNeverSplitsAUtf8Character) {
    // "é" is two bytes; a cut at an odd byte count would land inside one.
    std::string word;
    for (int i = 0; i < 20; ++i) word += "\xc3\xa9";
    std::string s = command_line_summary({word}, 10);  // 7 bytes of text + "..."
    EXPECT_EQ(s, "\xc3\xa9\xc3\xa9\xc3\xa9...");
}

TEST(Holder, ThisProcessInfoNamesHostPidUser) {
    HolderInfo info = this_process_info({"true"});
    EXPECT_FALSE(info.host.empty());
    EXPECT_EQ(info.pid, getpid());
    EXPECT_FALSE(info.user.empty());
    EXPECT_EQ(info.command, "true");
}

TEST(Holder, DescribesAKnownHolderWithRedisClockAge) {
    AcquireResult busy;
    busy.holder_pttl = 17'000;
    HolderInfo h;
    h.host = "web-2";
    h.pid = 4120;
    h.user = "deploy";
    h.acquired_ms = 1'000'000;
    h.now_ms = 1'000'000 + 723'456;  // 12m3.456s
    busy.holder = h;
    EXPECT_EQ(describe_holder(busy), "web-2 pid 4120 (user deploy) for 12m3s, expires in 17s");
}

TEST(Holder, EscapesControlCharactersFromRedis) {
    AcquireResult busy;
    busy.holder_pttl = 1000;
    HolderInfo h;
    h.host = "evil\nredlock-run: forged";
    h.pid = 1;
    busy.holder = h;
    EXPECT_EQ(describe_holder(busy), "evil\\nredlock-run: forged pid 1, expires in 1s");
}

TEST(Holder, DescribesAnUnknownHolder) {
    AcquireResult busy;
    busy.holder_pttl = 2500;
    EXPECT_EQ(describe_holder(busy), "an unknown holder, expires in 2.500s");
    busy.holder_pttl = -1;
    EXPECT_EQ(describe_holder(busy), "an unknown holder, with no expiry set");
}

TEST(Holder, InfoFieldsIncludeRedisNowPseudoField) {
    HolderInfo h = HolderInfo::from_fields({"host", "a", "acquired_ms", "5", "now_ms", "9"});
    EXPECT_EQ(h.now_ms, 9);
    EXPECT_EQ(h.acquired_ms, 5);
}

TEST(SyslogSink, FormatsAnRfc3164LineAsGlibcDoes) {
    std::string line = syslog_sink::format_line(syslog_sink::Severity::err, "lock 'x' lost", 42, 0);
    // <11> = user (1) * 8 + err (3); the timestamp depends on the local time zone.
    EXPECT_EQ(line.substr(0, 4), "<11>");
    EXPECT_EQ(line.substr(4 + 15), " redlock-run[42]: lock 'x' lost");
}

TEST(Holder, NsswitchFilesFirstOnlyWithTheDefaultAction) {
    EXPECT_TRUE(nsswitch_passwd_files_first("passwd:         files systemd\ngroup: files\n"));
    EXPECT_TRUE(nsswitch_passwd_files_first("# c\n  passwd:\tfiles # local\n"));
    EXPECT_TRUE(nsswitch_passwd_files_first("passwd: files"));
    EXPECT_FALSE(nsswitch_passwd_files_first("passwd: sss files\n"));
    EXPECT_FALSE(nsswitch_passwd_files_first("passwd: compat\n"));
    EXPECT_FALSE(nsswitch_passwd_files_first("passwd: filesystem\n"));
    EXPECT_FALSE(nsswitch_passwd_files_first("passwd: files [SUCCESS=continue] ldap\n"));
    EXPECT_FALSE(nsswitch_passwd_files_first("group: files\n"));
    EXPECT_FALSE(nsswitch_passwd_files_first("#passwd: files\n"));
    EXPECT_FALSE(nsswitch_passwd_files_first("passwd: files\npasswd: ldap\n"));
    EXPECT_FALSE(nsswitch_passwd_files_first(""));
}

TEST(Holder, PasswdFileGivesTheFirstEntryForTheUid) {
    const char* passwd =
        "# comment\n"
        "\n"
        "root:x:0:0:root:/root:/bin/bash\n"
        "broken:x:1x:1::/:/bin/sh\n"
        "deploy:x:1000:1000::/home/deploy:/bin/sh\n"
        "alias:x:1000:1000::/home/alias:/bin/sh\n"
        "last:x:4294967294:1::/:/bin/sh";
    EXPECT_EQ(passwd_file_user(passwd, 0), "root");
    EXPECT_EQ(passwd_file_user(passwd, 1000), "deploy");
    EXPECT_EQ(passwd_file_user(passwd, 4294967294u), "last");
    EXPECT_EQ(passwd_file_user(passwd, 1), std::nullopt);
    EXPECT_EQ(passwd_file_user(passwd, 10), std::nullopt);
    // NIS markers mean something only to getpwuid's compat source: never read past one.
    EXPECT_EQ(passwd_file_user("+::::::\nroot:x:0:0::/:/bin/sh\n", 0), std::nullopt);
}

TEST(Holder, ThisProcessUserIsWhatGetpwuidSays) {
    passwd pw{};
    passwd* found = nullptr;
    char buf[4096];
    ASSERT_EQ(getpwuid_r(geteuid(), &pw, buf, sizeof buf, &found), 0);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(this_process_info({}).user, found->pw_name);
}
