// sd_notify wrapper; see notifier.hpp.
#include "daemon/notifier.hpp"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdlib>

namespace ds4::daemon {

Notifier::Notifier() {
  const char* sock = std::getenv("NOTIFY_SOCKET");
  enabled_ = sock != nullptr && *sock != '\0';
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* wpid = std::getenv("WATCHDOG_PID");
  if (usec != nullptr) {
    const bool ours = wpid == nullptr || std::strtoll(wpid, nullptr, 10) == static_cast<long long>(getpid());
    const long long us = std::strtoll(usec, nullptr, 10);
    if (ours && us > 0) watchdog_ = std::chrono::microseconds(us);
  }
}

bool Notifier::send(const std::string& message) {
  if (!enabled_) return false;
  const int r = sd_notify(0, message.c_str());
  if (r < 0) spdlog::warn("sd_notify({}) failed: {}", message.substr(0, message.find('\n')), -r);
  return r > 0;
}

void Notifier::status(const std::string& text) { send("STATUS=" + text); }

void Notifier::loading(const std::string& text, std::chrono::microseconds extend) {
  send("STATUS=" + text + "\nEXTEND_TIMEOUT_USEC=" + std::to_string(extend.count()));
}

void Notifier::ready(const std::string& text) { send("READY=1\nSTATUS=" + text); }

void Notifier::stopping(const std::string& text) { send("STOPPING=1\nSTATUS=" + text); }

void Notifier::watchdog() { send("WATCHDOG=1"); }

}  // namespace ds4::daemon
