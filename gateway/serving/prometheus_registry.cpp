// Prometheus text exposition for ds4d's metrics. See prometheus_registry.hpp.
#include "gateway/serving/prometheus_registry.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace ds4::serving {
namespace {

// Prometheus floats: integers without a fraction, +Inf/-Inf/NaN spelled the Go way.
std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string escape_help(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void append_labels(std::string& out, const std::vector<std::string>& names, const LabelValues& values,
                   const std::string* le = nullptr) {
  if (names.empty() && !le) return;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    out += escape_label_value(values[i]);
    out += '"';
  }
  if (le) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

}  // namespace

std::string escape_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

MetricFamily::MetricFamily(std::string name, std::string help, Kind kind, std::vector<std::string> label_names,
                           std::vector<double> bucket_bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      kind_(kind),
      label_names_(std::move(label_names)),
      bounds_(std::move(bucket_bounds)) {
  for (size_t i = 1; i < bounds_.size(); ++i)
    if (!(bounds_[i - 1] < bounds_[i]))
      throw std::invalid_argument("histogram " + name_ + ": bucket bounds must increase");
}

MetricFamily::Series& MetricFamily::series_locked(const LabelValues& labels) {
  if (labels.size() != label_names_.size())
    throw std::invalid_argument(
        fmt::format("metric {}: {} label values for {} labels", name_, labels.size(), label_names_.size()));
  auto [it, inserted] = series_.try_emplace(labels);
  if (inserted && kind_ == Kind::Histogram) it->second.buckets.assign(bounds_.size(), 0);
  return it->second;
}

void MetricFamily::add(const LabelValues& labels, double amount) {
  if (kind_ == Kind::Histogram) throw std::logic_error("metric " + name_ + ": add on a histogram");
  if (kind_ == Kind::Counter && amount < 0) throw std::invalid_argument("counter " + name_ + ": negative increment");
  std::lock_guard lock(mu_);
  series_locked(labels).value += amount;
}

void MetricFamily::set(const LabelValues& labels, double value) {
  if (kind_ != Kind::Gauge) throw std::logic_error("metric " + name_ + ": set on a non-gauge");
  std::lock_guard lock(mu_);
  series_locked(labels).value = value;
}

void MetricFamily::observe(const LabelValues& labels, double value) {
  if (kind_ != Kind::Histogram) throw std::logic_error("metric " + name_ + ": observe on a non-histogram");
  std::lock_guard lock(mu_);
  Series& s = series_locked(labels);
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (value <= bounds_[i]) {
      ++s.buckets[i];
      break;
    }
  ++s.count;
  s.value += value;
}

double MetricFamily::value(const LabelValues& labels) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(labels);
  if (it == series_.end()) return 0;
  return kind_ == Kind::Histogram ? static_cast<double>(it->second.count) : it->second.value;
}

void MetricFamily::render(std::string& out) const {
  static const char* kTypeNames[] = {"counter", "gauge", "histogram"};
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name_, escape_help(help_), name_,
                     kTypeNames[static_cast<int>(kind_)]);
  std::lock_guard lock(mu_);
  // A family without labels always shows its one series, so dashboards see 0 rather than nothing.
  if (series_.empty() && label_names_.empty()) {
    if (kind_ == Kind::Histogram) {
      std::string inf = "+Inf";
      out += name_ + "_bucket";
      append_labels(out, {}, {}, &inf);
      out += " 0\n" + name_ + "_sum 0\n" + name_ + "_count 0\n";
    } else {
      out += name_ + " 0\n";
    }
    return;
  }
  for (const auto& [labels, s] : series_) {
    if (kind_ != Kind::Histogram) {
      out += name_;
      append_labels(out, label_names_, labels);
      out += ' ' + format_number(s.value) + '\n';
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      cumulative += s.buckets[i];
      std::string le = format_number(bounds_[i]);
      out += name_ + "_bucket";
      append_labels(out, label_names_, labels, &le);
      out += ' ' + std::to_string(cumulative) + '\n';
    }
    std::string inf = "+Inf";
    out += name_ + "_bucket";
    append_labels(out, label_names_, labels, &inf);
    out += ' ' + std::to_string(s.count) + '\n';
    out += name_ + "_sum";
    append_labels(out, label_names_, labels);
    out += ' ' + format_number(s.value) + '\n';
    out += name_ + "_count";
    append_labels(out, label_names_, labels);
    out += ' ' + std::to_string(s.count) + '\n';
  }
}

MetricFamily& PrometheusRegistry::add(std::unique_ptr<MetricFamily> family) {
  std::lock_guard lock(mu_);
  for (const auto& f : families_)
    if (f->name() == family->name()) throw std::invalid_argument("metric registered twice: " + f->name());
  families_.push_back(std::move(family));
  return *families_.back();
}

MetricFamily& PrometheusRegistry::counter(std::string name, std::string help, std::vector<std::string> labels) {
  return add(
      std::make_unique<MetricFamily>(std::move(name), std::move(help), MetricFamily::Kind::Counter, std::move(labels)));
}

MetricFamily& PrometheusRegistry::gauge(std::string name, std::string help, std::vector<std::string> labels) {
  return add(
      std::make_unique<MetricFamily>(std::move(name), std::move(help), MetricFamily::Kind::Gauge, std::move(labels)));
}

MetricFamily& PrometheusRegistry::histogram(std::string name, std::string help, std::vector<double> bounds,
                                            std::vector<std::string> labels) {
  return add(std::make_unique<MetricFamily>(std::move(name), std::move(help), MetricFamily::Kind::Histogram,
                                            std::move(labels), std::move(bounds)));
}

std::string PrometheusRegistry::render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& f : families_) f->render(out);
  return out;
}

}  // namespace ds4::serving
