// Perform-or-print for host changes; see system_changes.hpp.
#include "host/system_changes.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace ds4::host {
namespace fs = std::filesystem;

SystemChanges::SystemChanges(Sysroot root, CommandRunner& runner, bool dry_run, std::ostream& plan_out)
    : root_(std::move(root)), runner_(runner), dry_run_(dry_run), out_(plan_out) {}

void SystemChanges::record(const std::string& line) {
  log_.push_back(line);
  if (dry_run_) out_ << "would: " << line << "\n";
  else spdlog::info("{}", line);
}

void SystemChanges::note(const std::string& what) {
  log_.push_back("note: " + what);
  if (dry_run_) out_ << "note: " << what << "\n";
  else spdlog::info("{}", what);
}

bool SystemChanges::write_file_if_changed(const std::string& host_path, const std::string& content, unsigned mode) {
  const std::string real = root_.path(host_path);
  {
    std::ifstream in(real, std::ios::binary);
    if (in) {
      std::ostringstream s;
      s << in.rdbuf();
      if (s.str() == content) return false;
    }
  }
  record("write " + host_path);
  if (dry_run_) return true;
  std::error_code ec;
  fs::create_directories(fs::path(real).parent_path(), ec);
  if (ec) throw std::runtime_error("create directory for " + real + ": " + ec.message());
  const std::string tmp = real + ".ds4d-tmp";
  {
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    if (!o) throw std::runtime_error("cannot write " + tmp);
    o << content;
    o.flush();
    if (!o) throw std::runtime_error("short write to " + tmp);
  }
  if (chmod(tmp.c_str(), mode) != 0) throw std::runtime_error("chmod " + tmp + ": " + std::strerror(errno));
  fs::rename(tmp, real, ec);
  if (ec) throw std::runtime_error("rename " + tmp + " to " + real + ": " + ec.message());
  return true;
}

CommandResult SystemChanges::run_checked(const std::vector<std::string>& argv) {
  record("run " + describe_command(argv));
  if (dry_run_) return {};
  CommandResult r = runner_.run(argv);
  if (r.status != 0)
    throw std::runtime_error(describe_command(argv) + " failed with status " + std::to_string(r.status) +
                             (r.output.empty() ? std::string() : ": " + r.output));
  return r;
}

void SystemChanges::perform(const std::string& what, const std::function<void()>& action) {
  record(what);
  if (!dry_run_) action();
}

}  // namespace ds4::host
