#pragma once
// The supervisor's private sd_notify socket and its relay policy.
//
// systemd accepts notifications from the unit's main process only (NotifyAccess=main), and the
// main process is the supervisor, not ds4d. So the supervisor creates its own datagram socket in
// the abstract namespace ("@ds4d-supervisor/<pid>/<n>"), passes that as NOTIFY_SOCKET to the
// daemon, and relays what the daemon says to the real $NOTIFY_SOCKET under its own name.
// SO_PASSCRED tags every datagram with the sender's pid, and only the current child's are relayed.
//
// What is relayed (relay_child_message):
//   READY=1            forwarded the first time; after a restart the unit is already ready, so only
//                      its STATUS goes up.
//   STATUS=…           forwarded.
//   EXTEND_TIMEOUT_USEC=…  forwarded during the first start; after a restart, while the unit is
//                      ready and its watchdog armed, loading progress is turned into WATCHDOG=1
//                      (a reloading daemon is alive, and EXTEND_TIMEOUT means nothing then).
//   WATCHDOG=1         forwarded: the daemon sends it only when its engine worker is alive.
//   WATCHDOG=trigger, ERRNO=…  forwarded.
//   STOPPING=1         forwarded only when the supervisor itself is stopping.
//   MAINPID=, FDSTORE=, anything else: dropped (the supervisor stays the main process).
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
