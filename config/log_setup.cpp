// spdlog configuration; see log_setup.hpp.
#include "config/log_setup.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <stdexcept>

namespace ds4::config {
namespace {

// "%*" → the syslog priority digit of the message's level (sd-daemon(3) prefixes).
class SyslogPriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    char digit = '6';
    switch (msg.level) {
      case spdlog::level::trace:
      case spdlog::level::debug: digit = '7'; break;
      case spdlog::level::info: digit = '6'; break;
      case spdlog::level::warn: digit = '4'; break;
      case spdlog::level::err: digit = '3'; break;
      case spdlog::level::critical: digit = '2'; break;
      default: break;
    }
    dest.push_back(digit);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<SyslogPriorityFlag>(); }
};

}  // namespace

std::string logging_style(const Config::Log& log, const char* journal_stream) {
  if (log.format == "journal") return "journal";
  if (log.format == "console") return "console";
  if (log.format == "auto") return journal_stream != nullptr && *journal_stream ? "journal" : "console";
  throw std::invalid_argument("log.format: unknown format '" + log.format + "'");
}

void setup_logging(const Config::Log& log, const char* journal_stream) {
  const spdlog::level::level_enum level = spdlog::level::from_str(log.level);
  if (level == spdlog::level::off && log.level != "off")
    throw std::invalid_argument("log.level: unknown level '" + log.level + "'");
  std::shared_ptr<spdlog::logger> logger;
  if (logging_style(log, journal_stream) == "journal") {
    logger = std::make_shared<spdlog::logger>("ds4d", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    auto f = std::make_unique<spdlog::pattern_formatter>();
    f->add_flag<SyslogPriorityFlag>('*').set_pattern("<%*>%v");
    logger->set_formatter(std::move(f));
  } else {
    logger = std::make_shared<spdlog::logger>("ds4d", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  }
  logger->set_level(level);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace ds4::config
