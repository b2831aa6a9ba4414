// Private notify socket and relay policy; see notify_relay.hpp.
#include "supervisor/notify_relay.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace ds4::supervisor {

std::string relay_child_message(const std::string& datagram, RelayState& st) {
  std::string out;
  std::istringstream in(datagram);
  std::string line;
  auto emit = [&](const std::string& l) { out += (out.empty() ? "" : "\n") + l; };
  bool ping = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line == "READY=1") {
      if (!st.upstream_ready) {
        emit(line);
        st.upstream_ready = true;
      } else {
        ping = true;
      }
    } else if (line.rfind("STATUS=", 0) == 0 || line.rfind("ERRNO=", 0) == 0 || line == "WATCHDOG=trigger") {
      emit(line);
    } else if (line == "WATCHDOG=1") {
      ping = true;
    } else if (line.rfind("EXTEND_TIMEOUT_USEC=", 0) == 0) {
      if (!st.upstream_ready || st.stopping) emit(line);
      else ping = true;
    } else if (line == "STOPPING=1") {
      if (st.stopping) emit(line);
    } else {
      spdlog::debug("notify relay: dropping '{}' from the daemon", line);
    }
  }
  if (ping) emit("WATCHDOG=1");
  return out;
}

NotifyRelaySocket::NotifyRelaySocket() {
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("notify relay socket: ") + std::strerror(errno));
  const int one = 1;
  if (setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) != 0) {
    close(fd_);
    throw std::runtime_error(std::string("notify relay SO_PASSCRED: ") + std::strerror(errno));
  }
  static std::atomic<int> counter{0};
  const std::string name = "ds4d-supervisor/" + std::to_string(getpid()) + "/" + std::to_string(counter++);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  addr.sun_path[0] = '\0';
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd_);
    throw std::runtime_error("notify relay bind @" + name + ": " + std::strerror(errno));
  }
  address_ = "@" + name;
}

NotifyRelaySocket::~NotifyRelaySocket() {
  if (fd_ >= 0) close(fd_);
}

std::vector<NotifyDatagram> NotifyRelaySocket::receive_all() {
  std::vector<NotifyDatagram> out;
  for (;;) {
    char buf[4096];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{buf, sizeof buf - 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd_, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // EAGAIN: drained
    }
    NotifyDatagram d;
    d.text.assign(buf, static_cast<size_t>(n));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred{};
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        d.sender = cred.pid;
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

void notify_upstream(const std::string& message) {
  if (message.empty()) return;
  const int r = sd_notify(0, message.c_str());
  if (r < 0) spdlog::warn("sd_notify to systemd failed: {}", std::strerror(-r));
}

}  // namespace ds4::supervisor
