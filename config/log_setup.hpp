#pragma once
// Logging for ds4d and ds4d-supervisor through spdlog to stderr. Under systemd (JOURNAL_STREAM is
// set when stderr is connected to the journal) lines carry no timestamp and no colour, only a
// "<N>" syslog priority prefix that journald turns into the entry's priority (SyslogLevelPrefix=
// is on by default); at a terminal they get a timestamp and coloured levels.
#include <string>

#include "config/config.hpp"

namespace ds4::config {

// `journal_stream` is the JOURNAL_STREAM value (nullptr when unset); format "auto" picks the
// journal style when it is set. Throws std::invalid_argument on an unknown level or format.
void setup_logging(const Config::Log& log, const char* journal_stream);

// The pattern chosen (for tests): "journal" or "console".
std::string logging_style(const Config::Log& log, const char* journal_stream);

}  // namespace ds4::config
