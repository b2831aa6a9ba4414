// oom_score_adj read/write; see oom_adjust.hpp.
#include "host/oom_adjust.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ds4::host {

int write_own_oom_score_adj(int value) noexcept {
  if (value < -1000 || value > 1000) return EINVAL;
  char buf[16];
  int n = 0;
  unsigned v = value < 0 ? static_cast<unsigned>(-value) : static_cast<unsigned>(value);
  char digits[8];
  int nd = 0;
  do {
    digits[nd++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (value < 0) buf[n++] = '-';
  while (nd > 0) buf[n++] = digits[--nd];
  buf[n++] = '\n';
  const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t w = write(fd, buf, static_cast<size_t>(n));
  const int err = w == n ? 0 : (w < 0 ? errno : EIO);
  close(fd);
  return err;
}

int read_oom_score_adj(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/oom_score_adj";
  std::ifstream in(path);
  int v = 0;
  if (!(in >> v)) throw std::runtime_error(path + ": cannot read");
  return v;
}

}  // namespace ds4::host
