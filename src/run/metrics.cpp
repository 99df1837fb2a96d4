#include "run/metrics.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "util/clock.hpp"
#include "util/fd.hpp"

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

std::string escape_label_value(std::string_view v) {
    std::string out;
    for (char c : v) {
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
            if (outcome != labels.end()) file[lock->second].outcomes[outcome->second] = value;
            continue;
        }
        for (const Gauge& g : gauges)
            if (metric == g.name) file[lock->second].gauges[metric] = value;
    }
    return file;
}

std::string format_metrics(const MetricsFile& file) {
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
    LockMetrics& m = file[u.lock];
    m.outcomes[u.outcome] += 1;
    if (!u.ran) return;
    m.gauges["last_start_timestamp_seconds"] = u.start_s;
    m.gauges["last_end_timestamp_seconds"] = u.end_s;
    m.gauges["last_duration_seconds"] = u.duration_s;
    m.gauges["last_exit_status"] = u.exit_status;
    if (u.success) m.gauges["last_success_timestamp_seconds"] = u.end_s;
}

void update_metrics_file(const std::string& path, const MetricsUpdate& u) {
    auto fail = [&](const std::string& what) {
        throw std::runtime_error(fmt::format("{} ({})", what, std::strerror(errno)));
    };
    std::size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    // The directory, not the file: the file is replaced by rename, so a flock on it would guard
    // an inode that the next writer no longer opens.
    Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd.get() < 0) fail(fmt::format("cannot open the directory '{}'", dir));
    // Bounded: a writer that hangs must not hold every later run's exit forever.
    Deadline give_up = BootClock::now() + Millis(5'000);
    while (::flock(dir_fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) fail(fmt::format("cannot lock '{}'", dir));
        if (BootClock::now() >= give_up)
            throw std::runtime_error(fmt::format("'{}' stayed locked by another writer", dir));
        std::this_thread::sleep_for(Millis(10));
    }
    MetricsFile file;
    {
        std::ifstream in(path);
        if (in) {
            std::stringstream text;
            text << in.rdbuf();
            file = parse_metrics(text.str());
        }
    }
    apply_update(file, u);
    std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
    {
        Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (out.get() < 0) fail(fmt::format("cannot create '{}'", tmp));
        std::string text = format_metrics(file);
        std::string_view left = text;
        while (!left.empty()) {
            ssize_t n = ::write(out.get(), left.data(), left.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                ::unlink(tmp.c_str());
                fail(fmt::format("cannot write '{}'", tmp));
            }
            left.remove_prefix(static_cast<std::size_t>(n));
        }
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        fail(fmt::format("cannot rename '{}' to '{}'", tmp, path));
    }
}

}  // namespace redlock
