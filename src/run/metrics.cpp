#include "run/metrics.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

#include "lock/ledger/ledger.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/regular_file.hpp"
#include "util/utf8.hpp"

namespace redlock {
namespace {

constexpr std::string_view prefix = "redlock_run_";
constexpr std::string_view outcomes_metric = "outcomes_total";

struct Gauge {
    const char* name;
    const char* help;
};
constexpr Gauge gauges[] = {
    {"last_start_timestamp_seconds", "When the latest run of the lock's command started."},
    {"last_end_timestamp_seconds", "When the latest run of the lock's command ended."},
    {"last_success_timestamp_seconds", "When the latest run that exited 0 ended."},
    {"last_duration_seconds", "How long the latest run of the lock's command took."},
    {"last_exit_status", "redlock-run's exit status after the latest run of the command."},
    {"running", "Runs of the lock's command started on this host and not ended yet."},
};

// Reads `name{lock="...",outcome="..."} value`; false when the line is not one of ours.
bool parse_sample(std::string_view line, std::string& name,
                  std::map<std::string, std::string>& labels, double& value) {
    std::size_t brace = line.find('{');
    if (brace == std::string_view::npos) return false;
    name = std::string(line.substr(0, brace));
    std::size_t i = brace + 1;
    labels.clear();
    while (i < line.size() && line[i] != '}') {
        std::size_t eq = line.find('=', i);
        if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"')
            return false;
        std::string label(line.substr(i, eq - i));
        std::string v;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
            if (line[j] == '\\' && j + 1 < line.size()) {
                char c = line[++j];
                v += c == 'n' ? '\n' : c;
            } else {
                v += line[j];
            }
        }
        if (j >= line.size()) return false;
        labels[label] = v;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return false;
    std::string rest(line.substr(i + 1));
    char* end = nullptr;
    value = std::strtod(rest.c_str(), &end);
    return end != rest.c_str() && std::isfinite(value);
}

std::string number(double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e15)
        return fmt::format("{}", static_cast<long long>(v));
    return fmt::format("{:.3f}", v);
}

}  // namespace

std::string label_value_text(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size();) {
        auto c = static_cast<unsigned char>(v[i]);
        std::size_t len = utf8_sequence(v, i);
        // U+0080-U+009F (C1 controls) are encoded as C2 80 - C2 9F.
        bool control = (len == 1 && (c < 0x20 || c == 0x7f) && c != '\n') ||
                       (len == 2 && c == 0xC2 && static_cast<unsigned char>(v[i + 1]) < 0xA0);
        if (len == 0 || control) {
            out += "\xEF\xBF\xBD";    // U+FFFD REPLACEMENT CHARACTER
            i += len == 0 ? 1 : len;  // an invalid byte alone: resynchronise after it
        } else {
            out.append(v.substr(i, len));
            i += len;
        }
    }
    return out;
}

std::string escape_label_value(std::string_view v) {
    std::string out;
    for (char c : label_value_text(v)) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

MetricsFile parse_metrics(std::string_view text) {
    MetricsFile file;
    std::string name;
    std::map<std::string, std::string> labels;
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        if (line.empty() || line[0] == '#') continue;
        double value = 0;
        if (!parse_sample(line, name, labels, value) || !name.starts_with(prefix)) continue;
        auto lock = labels.find("lock");
        if (lock == labels.end()) continue;
        std::string metric = name.substr(prefix.size());
        if (metric == outcomes_metric) {
            auto outcome = labels.find("outcome");
            if (outcome != labels.end())
                file[label_value_text(lock->second)].outcomes[label_value_text(outcome->second)] =
                    value;
            continue;
        }
        for (const Gauge& g : gauges)
            if (metric == g.name) file[label_value_text(lock->second)].gauges[metric] = value;
    }
    return file;
}

std::string format_metrics(const MetricsFile& given) {
    // Two names that differ only in bytes label_value_text replaces would be two series with the
    // same labels, which makes node_exporter reject the whole file: merge them first.
    MetricsFile file;
    for (const auto& [lock, m] : given) {
        LockMetrics& merged = file[label_value_text(lock)];
        for (const auto& [name, v] : m.gauges) merged.gauges[name] = v;
        for (const auto& [outcome, n] : m.outcomes) merged.outcomes[label_value_text(outcome)] += n;
    }
    std::string out;
    for (const Gauge& g : gauges) {
        out += fmt::format("# HELP {}{} {}\n# TYPE {}{} gauge\n", prefix, g.name, g.help, prefix,
                           g.name);
        for (const auto& [lock, m] : file) {
            auto it = m.gauges.find(g.name);
            if (it != m.gauges.end())
                out += fmt::format("{}{}{{lock=\"{}\"}} {}\n", prefix, g.name,
                                   escape_label_value(lock), number(it->second));
        }
    }
    out += fmt::format(
        "# HELP {}{} Runs of the lock by outcome since the file was created.\n# TYPE {}{} "
        "counter\n",
        prefix, outcomes_metric, prefix, outcomes_metric);
    for (const auto& [lock, m] : file)
        for (const auto& [outcome, n] : m.outcomes)
            out += fmt::format("{}{}{{lock=\"{}\",outcome=\"{}\"}} {}\n", prefix, outcomes_metric,
                               escape_label_value(lock), escape_label_value(outcome), number(n));
    return out;
}

void apply_update(MetricsFile& file, const MetricsUpdate& u) {
    // Keyed as parse_metrics reads it back, so that the next run finds the same entry.
    LockMetrics& m = file[label_value_text(u.lock)];
    for (Outcome o : all_outcomes) m.outcomes.try_emplace(std::string(outcome_name(o)), 0);
    m.gauges.try_emplace("last_success_timestamp_seconds", 0);
    double& running = m.gauges.try_emplace("running", 0).first->second;
    if (u.started) {
        running += 1;
        m.gauges["last_start_timestamp_seconds"] = u.start_s;
        return;
    }
    m.outcomes[label_value_text(u.outcome)] += 1;
    if (!u.ran) return;
    // Never below 0: a command that could not start was never counted in.
    running = std::max(0.0, running - 1);
    m.gauges["last_start_timestamp_seconds"] = u.start_s;
    m.gauges["last_end_timestamp_seconds"] = u.end_s;
    m.gauges["last_duration_seconds"] = u.duration_s;
    m.gauges["last_exit_status"] = u.exit_status;
    if (u.success) m.gauges["last_success_timestamp_seconds"] = u.end_s;
}

// Root runs this from cron, in a directory that another user may be able to write
// (node_exporter's textfile directory is often owned by node_exporter's user; /tmp where
// fs.protected_symlinks is off). So nothing here follows a link or opens a FIFO, device or
// directory at a name that user can control, no name is predictable, and no wait is unbounded:
// - every name is looked up relative to one descriptor of the directory, opened once;
// - the temp file is created with O_EXCL (which never follows a link) under a random name;
// - PATH is read with O_NOFOLLOW | O_NONBLOCK and used only if fstat says it is a regular file,
//   read up to metrics_file_max_bytes, and looked at again (lstat) just before the rename;
// - writers serialise on a flock of a lock file that only the writing user can open.
namespace {

// Longer than any real writer holds the lock (a read and a write of at most 1 MiB), short
// enough that a stuck or hostile holder delays the run's exit by little.
constexpr Millis lock_wait{5'000};
constexpr int temp_name_tries = 16;

const char* file_kind(mode_t m) {
    if (S_ISLNK(m)) return "a symbolic link";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    return "not a regular file";
}

// `err` is read by the caller before anything else can change errno.
template <typename... Args>
[[noreturn]] void fail(int err, fmt::format_string<Args...> f, Args&&... args) {
    throw std::runtime_error(
        fmt::format("{} ({})", fmt::format(f, std::forward<Args>(args)...), std::strerror(err)));
}

std::string random_suffix() {
    unsigned char bytes[8];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(errno, "cannot get random bytes for a temporary name");
        got += static_cast<std::size_t>(n);
    }
    std::string hex;
    for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
    return hex;
}

// The temporary file, removed again unless it was renamed over PATH.
class TempFile {
  public:
    TempFile(int dir_fd, std::string name, int fd)
        : dir_fd_(dir_fd), name_(std::move(name)), fd_(fd) {}
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile() {
        if (!name_.empty()) ::unlinkat(dir_fd_, name_.c_str(), 0);
    }
    const std::string& name() const { return name_; }
    Fd& fd() { return fd_; }
    void renamed() { name_.clear(); }

  private:
    int dir_fd_;
    std::string name_;
    Fd fd_;
};

// O_EXCL fails on any existing name, a symbolic link or a FIFO included, without following or
// opening it; the random name makes planting something there first a guess of 64 bits.
TempFile create_temp_file(int dir_fd, const std::string& dir, const std::string& base) {
    for (int i = 0; i < temp_name_tries; ++i) {
        // Short enough for NAME_MAX whatever the length of `base`.
        std::string name = fmt::format(".{}.{}.tmp", base.substr(0, 200), random_suffix());
        int fd = ::openat(
            dir_fd, name.c_str(),
            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
        if (fd >= 0) return TempFile(dir_fd, std::move(name), fd);
        if (errno != EEXIST) fail(errno, "cannot create a temporary file in '{}'", dir);
    }
    throw std::runtime_error(
        fmt::format("{} random temporary names in '{}' were all taken", temp_name_tries, dir));
}

// The writers' lock: a flock of ".BASE.lock" beside the file. Not of the directory, which any
// user who can read it can flock too, and so delay or stop every update. The lock file is
// created 0600: other users cannot open it, so they cannot flock it. One that is there already
// and not ours (someone who can write the directory made it) may be held by anyone: the wait
// is bounded all the same, and after it the update goes ahead unlocked, with a warning. The
// rename keeps the file whole either way; without the lock, an update that races ours may be
// lost. Returns the locked descriptor, or none.
Fd lock_writers(int dir_fd, const std::string& path, const std::string& base) {
    std::string name = fmt::format(".{}.lock", base.substr(0, 240));
    Fd fd(::openat(dir_fd, name.c_str(),
                   O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
        int err = errno;
        // No lock file and a directory we cannot write: creating the temp file fails too, and
        // that failure is the one warning.
        if ((err == EACCES || err == EROFS) &&
            ::faccessat(dir_fd, name.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) != 0)
            return Fd();
        log::warning("metrics file '{}': cannot open its lock file '{}' ({}); updating it unlocked",
                     path, name, std::strerror(err));
        return Fd();
    }
    if (!S_ISREG(st.st_mode)) {
        log::warning("metrics file '{}': its lock file '{}' is {}; updating it unlocked", path,
                     name, file_kind(st.st_mode));
        return Fd();
    }
    Deadline give_up = BootClock::now() + lock_wait;
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            log::warning("metrics file '{}': cannot lock '{}' ({}); updating it unlocked", path,
                         name, std::strerror(errno));
            return Fd();
        }
        if (BootClock::now() >= give_up) {
            log::warning(
                "metrics file '{}': its lock file '{}' (owner uid {}) stayed locked for {}s; "
                "updating it unlocked, a concurrent update may be lost",
                path, name, st.st_uid, lock_wait.count() / 1000);
            return Fd();
        }
        std::this_thread::sleep_for(Millis(10));
    }
    return fd;
}

struct Existing {
    bool found = false;
    struct stat st {};
    MetricsFile metrics;
};

Existing read_existing(int dir_fd, const std::string& base) {
    Existing e;
    Fd in(
        ::openat(dir_fd, base.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!in) {
        if (errno == ENOENT) return e;
        // O_NOFOLLOW's answer for a symbolic link.
        if (errno == ELOOP)
            throw std::runtime_error("it is a symbolic link now; left alone, not written through");
        fail(errno, "cannot open it");
    }
    if (::fstat(in.get(), &e.st) != 0) fail(errno, "cannot stat it");
    if (!S_ISREG(e.st.st_mode))
        throw std::runtime_error(
            fmt::format("it is {} now; left alone, not written through", file_kind(e.st.st_mode)));
    e.found = true;
    // Bounded: a file that keeps growing (a log named by mistake) must not grow our memory.
    std::string text(metrics_file_max_bytes + 1, '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        ssize_t n = ::read(in.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(errno, "cannot read it");
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got > metrics_file_max_bytes)
        throw std::runtime_error(
            fmt::format("it is larger than {} MiB, so not a metrics file; left alone",
                        metrics_file_max_bytes >> 20));
    text.resize(got);
    e.metrics = parse_metrics(text);
    return e;
}

}  // namespace

void check_metrics_path(const std::string& path, const std::string& option) {
    require_writable_directory(path, option);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
    // Replacing it would be wrong for each of these: a link's target is not ours to write, and
    // `--metrics-file /dev/null` run as root would replace /dev/null itself.
    throw UsageError(
        fmt::format("{} '{}' is {}, not a regular file (name a file to create or update)", option,
                    path, file_kind(st.st_mode)));
}

void update_metrics_file(const std::string& path, const MetricsUpdate& u) {
    std::size_t slash = path.rfind('/');
    std::string dir = directory_of(path);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty() || base == "." || base == "..")
        throw std::runtime_error("it names a directory, not a file");
    // The directory's own path may go through links (the administrator's choice); every name
    // in it is then looked up from this one descriptor.
    Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd) fail(errno, "cannot open the directory '{}'", dir);
    Fd lock = lock_writers(dir_fd.get(), path, base);

    Existing existing = read_existing(dir_fd.get(), base);
    apply_update(existing.metrics, u);
    std::string text = format_metrics(existing.metrics);
    if (text.size() > metrics_file_max_bytes)
        throw std::runtime_error(fmt::format("it would grow beyond {} MiB; left as it was",
                                             metrics_file_max_bytes >> 20));

    TempFile tmp = create_temp_file(dir_fd.get(), dir, base);
    int out = tmp.fd().get();
    // The file keeps its owner (root can give it back) and its read and write bits, so that an
    // operator's chmod stays; a new one is 0644 whatever the umask, for the exporter to read.
    // Never an execute, set-id or sticky bit: this is text.
    mode_t mode = existing.found ? existing.st.st_mode & 0666 : 0644;
    if (existing.found && ::geteuid() == 0 &&
        ::fchown(out, existing.st.st_uid, existing.st.st_gid) != 0)
        fail(errno, "cannot give '{}' its owner back", tmp.name());
    if (::fchmod(out, mode) != 0) fail(errno, "cannot set the mode of '{}'", tmp.name());
    std::string_view left = text;
    while (!left.empty()) {
        ssize_t n = ::write(out, left.data(), left.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(errno, "cannot write '{}'", tmp.name());
        left.remove_prefix(static_cast<std::size_t>(n));
    }
    // Data on disk before the rename makes it visible: a crash must leave the old file or the
    // new one, never an empty one.
    if (::fsync(out) != 0) fail(errno, "cannot write '{}' to disk", tmp.name());
    // rename replaces the name, never writes through it; this last look only keeps a FIFO,
    // device or link that appeared during the update from being replaced silently.
    struct stat now {};
    if (::fstatat(dir_fd.get(), base.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISREG(now.st_mode))
        throw std::runtime_error(fmt::format("it is {} now; left alone", file_kind(now.st_mode)));
    if (::renameat(dir_fd.get(), tmp.name().c_str(), dir_fd.get(), base.c_str()) != 0)
        fail(errno, "cannot rename '{}' over it", tmp.name());
    tmp.renamed();
    // The rename itself on disk too; a file system that cannot fsync a directory loses nothing
    // but that, so its error is not one.
    ::fsync(dir_fd.get());
}

}  // namespace redlock
