#pragma once
// Test helpers: a temporary fake root directory with /proc/meminfo, /proc/swaps and optional
// earlyoom files, and a CommandRunner that records commands instead of running them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "host/command_runner.hpp"

namespace ds4::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ds4d-test-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& p, const std::string& content) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream o(p, std::ios::binary | std::ios::trunc);
  o << content;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// meminfo text with the given sizes in KiB.
inline std::string meminfo_text(uint64_t total_kib, uint64_t available_kib, uint64_t swap_total_kib,
                                uint64_t swap_free_kib) {
  return "MemTotal:       " + std::to_string(total_kib) + " kB\n" +
         "MemFree:        " + std::to_string(available_kib / 2) + " kB\n" +
         "MemAvailable:   " + std::to_string(available_kib) + " kB\n" + "Cached:         1024 kB\n" +
         "SwapTotal:      " + std::to_string(swap_total_kib) + " kB\n" +
         "SwapFree:       " + std::to_string(swap_free_kib) + " kB\n" + "HugePages_Total:       0\n";
}

inline const char* kSwapsHeader = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";

// Records every command. Answers with `answers[argv[0]]` when the program has one (e.g. a swapon
// that fails with "Device or resource busy"), otherwise with status `next_status` and no output.
class RecordingRunner final : public host::CommandRunner {
 public:
  host::CommandResult run(const std::vector<std::string>& argv) override {
    commands.push_back(host::describe_command(argv));
    const auto it = answers.find(argv.at(0));
    if (it != answers.end()) return it->second;
    return {next_status, ""};
  }
  std::vector<std::string> commands;
  int next_status = 0;
  std::map<std::string, host::CommandResult> answers;
};

}  // namespace ds4::testing
