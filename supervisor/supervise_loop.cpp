// The supervisor's poll loop; see supervise_loop.hpp.
#include "supervisor/supervise_loop.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "supervisor/notify_relay.hpp"

namespace ds4::supervisor {
namespace {

using Clock = std::chrono::steady_clock;

std::optional<std::chrono::microseconds> own_watchdog() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* wpid = std::getenv("WATCHDOG_PID");
  if (usec == nullptr) return std::nullopt;
  if (wpid != nullptr && std::strtoll(wpid, nullptr, 10) != getpid()) return std::nullopt;
  const long long us = std::strtoll(usec, nullptr, 10);
  if (us <= 0) return std::nullopt;
  return std::chrono::microseconds(us);
}

}  // namespace

int run_supervise_loop(LoopSettings s) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&mask, sig);
  if (sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) throw std::runtime_error("sigprocmask failed");
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));

  NotifyRelaySocket relay;
  RelayState relay_state;
  RestartPolicy policy(s.restart);
  const auto watchdog = own_watchdog();
  if (watchdog) s.launch.watchdog_usec = static_cast<unsigned long long>(watchdog->count());
  s.launch.notify_socket = relay.address();

  pid_t child = 0;
  bool stop_requested = false;
  constexpr Clock::time_point kNever = Clock::time_point::max();
  Clock::time_point start_at = Clock::now();  // kNever: no start pending
  Clock::time_point kill_at = kNever;         // kNever: no stop timeout running
  Clock::time_point next_ping = Clock::now();
  int result = -1;

  while (result < 0) {
    const auto now = Clock::now();
    if (child == 0 && !stop_requested && start_at <= now) {
      start_at = kNever;
      try {
        child = spawn_daemon(s.launch);
        spdlog::info("started {} (pid {})", s.launch.argv[0], child);
        notify_upstream("STATUS=Starting ds4d (pid " + std::to_string(child) + ")");
      } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        notify_upstream("STATUS=" + std::string(e.what()));
        result = 1;
        break;
      }
    }
    if (child == 0 && stop_requested) {
      result = 0;
      break;
    }
    if (kill_at <= now && child != 0) {
      spdlog::warn("ds4d (pid {}) did not stop within {} s; sending SIGKILL", child, s.stop_timeout.count());
      kill(child, SIGKILL);
      kill_at = kNever;
    }
    if (watchdog && relay_state.upstream_ready && child == 0 && next_ping <= now) {
      notify_upstream("WATCHDOG=1");  // the supervisor is in control between restarts
      next_ping = now + *watchdog / 2;
    }

    auto deadline = now + std::chrono::seconds(3600);
    deadline = std::min({deadline, start_at, kill_at});
    if (watchdog && relay_state.upstream_ready && child == 0) deadline = std::min(deadline, next_ping);
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    pollfd fds[2] = {{sfd, POLLIN, 0}, {relay.fd(), POLLIN, 0}};
    const int n = poll(fds, 2, static_cast<int>(std::max<long long>(0, std::min<long long>(wait_ms + 1, 3600000))));
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));

    if (fds[1].revents & POLLIN) {
      for (const auto& d : relay.receive_all()) {
        if (child == 0 || d.sender != child) {
          spdlog::debug("notify relay: ignoring a datagram from pid {}", d.sender);
          continue;
        }
        notify_upstream(relay_child_message(d.text, relay_state));
      }
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo si{};
      while (read(sfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        const int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGTERM || sig == SIGINT) {
          if (!stop_requested) {
            stop_requested = true;
            relay_state.stopping = true;
            spdlog::info("received {}; stopping ds4d", sig == SIGTERM ? "SIGTERM" : "SIGINT");
            notify_upstream("STOPPING=1\nSTATUS=Stopping");
            if (child != 0) {
              kill(child, SIGTERM);
              kill_at = Clock::now() + s.stop_timeout;
            }
          }
        } else if (sig == SIGHUP) {
          spdlog::info("SIGHUP ignored (ds4d has no reload; restart the service to apply changes)");
        } else if (sig == SIGCHLD) {
          int status = 0;
          pid_t p;
          while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
            if (p != child) continue;
            child = 0;
            kill_at = kNever;
            ChildExit e;
            e.signaled = WIFSIGNALED(status);
            e.code = e.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
            const ExitDecision d = policy.on_exit(e, stop_requested, Clock::now());
            if (d.restart) {
              spdlog::error("{}", d.reason);
              start_at = Clock::now() + d.delay;
              next_ping = Clock::now();
            } else {
              (d.exit_code == 0 ? spdlog::info("{}", d.reason) : spdlog::error("{}", d.reason));
              result = d.exit_code;
            }
            notify_upstream("STATUS=" + d.reason);
          }
        }
      }
    }
  }
  if (child != 0) {  // leaving with a live child (spawn error path never has one): stop it
    kill(child, SIGTERM);
    int status = 0;
    waitpid(child, &status, 0);
  }
  close(sfd);
  return result;
}

}  // namespace ds4::supervisor
