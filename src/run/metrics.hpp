// --metrics-file: the latest run of each lock and counts of outcomes, in the Prometheus text
// format for node_exporter's textfile collector. Several locks share one file: each run reads
// it back, updates its own lock's series and writes it whole (temp file + rename) under a flock
// of a lock file beside it that only the writing user can open.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace redlock {

struct LockMetrics {
    // Gauges by metric name (without the prefix): last_start_timestamp_seconds, ...
    std::map<std::string, double> gauges;
    // redlock_run_outcomes_total by outcome.
    std::map<std::string, double> outcomes;
};

// By lock name as label_value_text gives it (valid UTF-8, no control characters).
using MetricsFile = std::map<std::string, LockMetrics>;

// Reads back what format_metrics wrote; lines it does not know are dropped, never an error.
MetricsFile parse_metrics(std::string_view text);
std::string format_metrics(const MetricsFile& file);
// `v` as a label value can hold it: each byte that is not valid UTF-8 and each control
// character (C0, DEL, C1) but the newline becomes U+FFFD. The text format requires UTF-8 (the
// parsers of node_exporter, promtool and prometheus_client reject the whole file otherwise), and
// a CR or NEL splits the line for readers that take those as line ends.
std::string label_value_text(std::string_view v);
// A label value escaped as the text format wants it (\\, \", \n), after label_value_text.
std::string escape_label_value(std::string_view v);

struct MetricsUpdate {
    std::string lock;
    std::string outcome;
    // The run held the lock and tried its command (it ran, or could not be started): the
    // timestamps and the exit status are new, and running goes down by one.
    bool ran = false;
    double start_s = 0, end_s = 0, duration_s = 0;
    int exit_status = 0;
    bool success = false;
    // The start of a command (written as it starts, so that a run that hangs shows): running
    // goes up by one and last_start is set; no outcome is counted.
    bool started = false;
};
// Every series an alert reads exists from a lock's first write on, with its starting value: each
// outcome's counter at 0 (so that increase() sees the first stuck or lost run), running at 0, and
// last_success at 0 until a run succeeds (so that a job that never succeeded is as old as 1970).
void apply_update(MetricsFile& file, const MetricsUpdate& u);

// The most update_metrics_file reads of an existing file, and writes: a textfile of 1 MiB is
// thousands of locks; anything larger is not one of ours (a log named by mistake).
inline constexpr std::size_t metrics_file_max_bytes = 1 << 20;

// Before the run: UsageError when `path` exists and is not a regular file (a symbolic link, a
// device such as /dev/null, a FIFO, a directory, a socket), or when its directory is missing or
// not writable by this user, naming the path by `option` (--metrics-file, or its variable when
// the path came from there). Other failures are left to update_metrics_file (a warning).
void check_metrics_path(const std::string& path, const std::string& option = "--metrics-file");

// Reads, updates and replaces `path` atomically; throws std::runtime_error with the reason,
// without writing anything, when `path` has become something other than a regular file, is larger
// than metrics_file_max_bytes, or cannot be written. See the .cpp for what it defends against.
void update_metrics_file(const std::string& path, const MetricsUpdate& u);

}  // namespace redlock
