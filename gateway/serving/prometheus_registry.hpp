#pragma once
// A small Prometheus registry: counter, gauge and histogram families with labels, rendered in
// the text exposition format 0.0.4 (`# HELP`, `# TYPE`, one sample per line, histograms as
// cumulative `_bucket{le=…}` plus `_sum` and `_count`).
//
// Why our own: the daemon needs perhaps twenty series and no push gateway, so a client library
// would be a dependency for a few hundred lines. Families are registered once at start-up and
// live as long as the registry; handles are plain pointers into it. Updates take one mutex per
// family, which is cheap next to a model forward pass (the only hot caller adds a few samples
// per request, not per token).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ds4::serving {

// Label values in the order of the family's label names.
using LabelValues = std::vector<std::string>;

class MetricFamily {
 public:
  enum class Kind { Counter, Gauge, Histogram };

  MetricFamily(std::string name, std::string help, Kind kind, std::vector<std::string> label_names,
               std::vector<double> bucket_bounds = {});

  // Counter: adds a non-negative amount. Gauge: adds any amount.
  void add(const LabelValues& labels, double amount);
  // Gauge only.
  void set(const LabelValues& labels, double value);
  // Histogram only.
  void observe(const LabelValues& labels, double value);

  // Current value of one counter/gauge series (0 when never touched); histogram: its count.
  double value(const LabelValues& labels) const;

  void render(std::string& out) const;

  const std::string& name() const { return name_; }

 private:
  struct Series {
    double value = 0;               // counter, gauge; histogram sum
    std::vector<uint64_t> buckets;  // histogram: per-bound counts, not cumulative
    uint64_t count = 0;             // histogram
  };
  Series& series_locked(const LabelValues& labels);

  std::string name_, help_;
  Kind kind_;
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<LabelValues, Series> series_;
};

class PrometheusRegistry {
 public:
  MetricFamily& counter(std::string name, std::string help, std::vector<std::string> labels = {});
  MetricFamily& gauge(std::string name, std::string help, std::vector<std::string> labels = {});
  MetricFamily& histogram(std::string name, std::string help, std::vector<double> bounds,
                          std::vector<std::string> labels = {});

  // The whole exposition, families in registration order.
  std::string render() const;

 private:
  MetricFamily& add(std::unique_ptr<MetricFamily> family);
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

// Escapes a label value for the text format (backslash, double quote, newline).
std::string escape_label_value(const std::string& v);

}  // namespace ds4::serving
