// Service user lookup and privilege drop; see privileges.hpp.
#include "host/privileges.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace ds4::host {

ServiceIdentity lookup_service_identity(const std::string& user) {
  errno = 0;
  const passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr)
    throw std::runtime_error("service user '" + user + "' does not exist (create it with systemd-sysusers)");
  ServiceIdentity id;
  id.user = user;
  id.uid = pw->pw_uid;
  id.gid = pw->pw_gid;
  id.home = pw->pw_dir ? pw->pw_dir : "";
  int n = 32;
  for (;;) {
    id.groups.resize(static_cast<size_t>(n));
    int got = n;
    if (getgrouplist(user.c_str(), id.gid, id.groups.data(), &got) >= 0) {
      id.groups.resize(static_cast<size_t>(got));
      break;
    }
    n = got > n ? got : n * 2;
  }
  return id;
}

int drop_privileges(const ServiceIdentity& id) noexcept {
  if (setgroups(id.groups.size(), id.groups.data()) != 0) return errno;
  if (setgid(id.gid) != 0) return errno;
  if (setuid(id.uid) != 0) return errno;
  if (id.uid != 0 && setuid(0) == 0) return EPERM;  // must not be able to regain root
  return 0;
}

}  // namespace ds4::host
