#pragma once
// The supervisor's private sd_notify socket and its relay policy. systemd accepts notifications
// from the main process only (NotifyAccess=main), which is the supervisor, so it gives the daemon
// its own abstract datagram socket as NOTIFY_SOCKET and relays what the current child says
// (SO_PASSCRED tells whose datagram it is) to the real $NOTIFY_SOCKET. What is forwarded, turned
// into WATCHDOG=1 or dropped (relay_child_message): supervisor/README.md §notify-relay.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace ds4::supervisor {

struct RelayState {
  bool upstream_ready = false;  // READY=1 already sent to systemd
  bool stopping = false;        // the supervisor is stopping
};

// The lines to send upstream for one child datagram ("" when nothing); updates `state`.
std::string relay_child_message(const std::string& datagram, RelayState& state);

struct NotifyDatagram {
  pid_t sender = 0;  // from SCM_CREDENTIALS
  std::string text;
};

class NotifyRelaySocket {
 public:
  // Creates and binds the socket; throws std::runtime_error on failure.
  NotifyRelaySocket();
  ~NotifyRelaySocket();
  NotifyRelaySocket(const NotifyRelaySocket&) = delete;
  NotifyRelaySocket& operator=(const NotifyRelaySocket&) = delete;

  int fd() const { return fd_; }
  // The NOTIFY_SOCKET value for the child ("@…" for the abstract namespace).
  const std::string& address() const { return address_; }
  // Reads every pending datagram without blocking.
  std::vector<NotifyDatagram> receive_all();

 private:
  int fd_ = -1;
  std::string address_;
};

// Sends to the supervisor's own $NOTIFY_SOCKET (systemd); no-op when unset.
void notify_upstream(const std::string& message);

}  // namespace ds4::supervisor
