#pragma once
// Runs `f` with file descriptor 2 redirected to a temporary file and returns what was written:
// how tests read what spdlog's stderr sinks (installed by config::setup_logging) printed.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "tests/support/test_sysroot.hpp"

namespace ds4::testing {

inline std::string capture_stderr_of(const std::function<void()>& f) {
  TempDir d;
  const std::string path = d.str() + "/err";
  fflush(stderr);
  const int saved = dup(2);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  close(fd);
  f();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  return read_file(path);
}

}  // namespace ds4::testing
