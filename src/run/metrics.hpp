// --metrics-file: the latest run of each lock and counts of outcomes, in the Prometheus text
// format for node_exporter's textfile collector. Several locks share one file: each run reads
// it back, updates its own lock's series and writes it whole (temp file + rename) under a flock
// of the file's directory.
#pragma once

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

// By lock name.
using MetricsFile = std::map<std::string, LockMetrics>;

// Reads back what format_metrics wrote; lines it does not know are dropped, never an error.
MetricsFile parse_metrics(std::string_view text);
std::string format_metrics(const MetricsFile& file);
// A label value escaped as the text format wants it (\\, \", \n).
std::string escape_label_value(std::string_view v);

struct MetricsUpdate {
    std::string lock;
    std::string outcome;
    bool ran = false;  // the command started: the timestamps and the exit status are new
    double start_s = 0, end_s = 0, duration_s = 0;
    int exit_status = 0;
    bool success = false;
};
void apply_update(MetricsFile& file, const MetricsUpdate& u);

// Reads, updates and replaces `path` atomically; throws std::runtime_error with the reason.
void update_metrics_file(const std::string& path, const MetricsUpdate& u);

}  // namespace redlock
