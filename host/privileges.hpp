#pragma once
// The service identity the daemon runs as, and the privilege drop. The supervisor runs as root
// (it makes swap and writes the earlyoom drop-in); the daemon must not. The user is resolved
// before fork (getpwnam/getgrouplist are not safe after fork in general), and the drop in the
// child is setgroups → setgid → setuid, then a check that root cannot be regained.
#include <sys/types.h>

#include <string>
#include <vector>

namespace ds4::host {

struct ServiceIdentity {
  std::string user;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (e.g. video/render for /dev/nvidia*)
  std::string home;
};

// Throws std::runtime_error naming the user when it does not exist.
ServiceIdentity lookup_service_identity(const std::string& user);

// setgroups, setgid, setuid; then verifies setuid(0) fails. Returns 0 or an errno value. Uses
// only system calls, so it is safe between fork and exec.
int drop_privileges(const ServiceIdentity& id) noexcept;

}  // namespace ds4::host
