// KV checkpoints on disk. See disk_store.hpp.
#include "gateway/cache/disk_store.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include "gateway/cache/token_prefix.hpp"

namespace ds4::cache {
namespace fs = std::filesystem;
namespace {

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

bool is_checkpoint_name(const std::string& name) {
  // 32 lowercase hex digits + suffix: exactly what checkpoint_file_name() makes.
  const std::string suffix = kCheckpointSuffix;
  if (name.size() != 32 + suffix.size() || !name.ends_with(suffix)) return false;
  for (size_t i = 0; i < 32; i++)
    if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(static_cast<unsigned char>(name[i])))
      return false;
  return true;
}

std::string write_failure_reason(const std::system_error& e) {
  switch (e.code().value()) {
    case ENOSPC:
    case EDQUOT: return "disk_full";
    case EROFS:
    case EACCES:
    case EPERM: return "read_only";
    default: return "write_failed";
  }
}

std::optional<uint64_t> statvfs_free_bytes(const fs::path& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return uint64_t(st.f_bavail) * uint64_t(st.f_frsize);
}

double mib(uint64_t bytes) { return double(bytes) / (1 << 20); }

}  // namespace

DiskStore::DiskStore(DiskStoreConfig config, DiskEventFn on_event)
    : config_(std::move(config)), on_event_(std::move(on_event)) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  if (ensure_dir_locked()) rebuild_index_locked();
  spdlog::info("kv checkpoints: {} ({} files, {:.1f} of {:.1f} MiB)", config_.dir.string(), index_.size(),
               double(bytes_) / (1 << 20), double(config_.budget_bytes) / (1 << 20));
}

void DiskStore::emit(std::string_view event, std::string_view reason, uint64_t bytes) const {
  if (on_event_) on_event_(event, reason, bytes);
}

void DiskStore::set_health_locked(std::string_view state, std::string problem) {
  // Failure texts name temp files and sizes, so each one differs: the log follows the state.
  if (state != health_state_) {
    if (!state.empty()) spdlog::error("kv checkpoints: {}; serving continues without writing checkpoints", problem);
    else spdlog::info("kv checkpoints: {} is writable again", config_.dir.string());
    health_state_ = std::string(state);
  }
  health_ = std::move(problem);
}

std::string DiskStore::health() const {
  std::lock_guard lock(mu_);
  return health_;
}

bool DiskStore::ensure_dir_locked() {
  if (dir_ready_ && fs::is_directory(config_.dir)) return true;
  dir_ready_ = false;
  std::error_code ec;
  fs::create_directories(config_.dir, ec);
  if (ec || !fs::is_directory(config_.dir)) {
    set_health_locked("no_directory", fmt::format("cannot create directory {}: {}", config_.dir.string(),
                                                  ec ? ec.message() : std::string("not a directory")));
    return false;
  }
  // Checkpoints hold conversation state: owner only.
  if (::chmod(config_.dir.c_str(), 0700) != 0 && errno != EPERM && errno != EROFS)
    spdlog::warn("kv checkpoints: cannot make {} mode 0700: {}", config_.dir.string(), std::strerror(errno));
  dir_ready_ = true;
  return true;
}

void DiskStore::rebuild_index_locked() {
  index_.clear();
  bytes_ = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(config_.dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(kTempPrefix)) {
      // An interrupted write (crash, kill -9): never renamed, so never a checkpoint.
      fs::remove(it->path(), ec);
      ec.clear();
      continue;
    }
    if (!is_checkpoint_name(name)) continue;  // not ours; leave it alone
    try {
      CheckpointHeader h = read_checkpoint_header(it->path());
      if (h.model_fingerprint != config_.model_fingerprint) {
        remove_locked(name, "reject", "foreign_model");
        spdlog::warn("kv checkpoints: removed {}: written for another model", name);
        continue;
      }
      if (checkpoint_file_name(h.model_fingerprint, h.tokens) != name) {
        remove_locked(name, "reject", "corrupt");
        spdlog::warn("kv checkpoints: removed {}: its name does not match its tokens", name);
        continue;
      }
      Entry e;
      e.tokens = std::move(h.tokens);
      e.bytes = h.file_bytes;
      e.last_used_unix = double(
          std::chrono::duration_cast<std::chrono::seconds>(fs::last_write_time(it->path(), ec).time_since_epoch())
              .count());
      bytes_ += e.bytes;
      index_.emplace(name, std::move(e));
    } catch (const CheckpointError& e) {
      spdlog::warn("kv checkpoints: removed {}: {}", name, e.what());
      remove_locked(name, "reject", e.kind);
    }
  }
  if (ec) set_health_locked("unreadable", fmt::format("cannot list {}: {}", config_.dir.string(), ec.message()));
  if (bytes_ > config_.budget_bytes) evict_locked({}, {});
}

std::optional<DiskMatch> DiskStore::find(std::span<const Token> prompt, size_t max_tokens) const {
  std::lock_guard lock(mu_);
  std::optional<DiskMatch> best;
  for (const auto& [name, e] : index_) {
    if (e.tokens.size() > max_tokens || !is_prefix<Token>(e.tokens, prompt)) continue;
    if (!best || e.tokens.size() > best->tokens) best = DiskMatch{name, e.tokens.size()};
  }
  return best;
}

std::optional<std::vector<Token>> DiskStore::longest_tokens_if(
    size_t longer_than, const std::function<bool(std::span<const Token>)>& usable) const {
  std::lock_guard lock(mu_);
  const Entry* best = nullptr;
  for (const auto& [name, e] : index_) {
    if (e.tokens.size() <= longer_than || (best && e.tokens.size() <= best->tokens.size())) continue;
    if (usable(e.tokens)) best = &e;
  }
  if (!best) return std::nullopt;
  return best->tokens;
}

bool DiskStore::contains(std::span<const Token> tokens) const {
  std::lock_guard lock(mu_);
  return index_.count(checkpoint_file_name(config_.model_fingerprint, tokens)) != 0;
}

std::optional<Checkpoint> DiskStore::load(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  try {
    Checkpoint c = read_checkpoint(config_.dir / name);
    if (c.model_fingerprint != config_.model_fingerprint)
      throw CheckpointError("foreign_model", "written for another model");
    if (c.tokens != it->second.tokens) throw CheckpointError("corrupt", "tokens changed since the index was built");
    it->second.hits += 1;
    it->second.last_used_unix = unix_now();
    std::error_code ec;
    fs::last_write_time(config_.dir / name, fs::file_time_type::clock::now(), ec);  // recency survives restarts
    emit("read", "", it->second.bytes);
    return c;
  } catch (const CheckpointError& e) {
    spdlog::warn("kv checkpoints: removed {}: {}", name, e.what());
    remove_locked(name, "reject", e.kind);
    return std::nullopt;
  }
}

std::optional<std::string> DiskStore::store(const Checkpoint& checkpoint, std::span<const std::string> keep) {
  if (!enabled() || checkpoint.tokens.empty()) return std::nullopt;
  std::lock_guard lock(mu_);
  const std::string name = checkpoint_file_name(config_.model_fingerprint, checkpoint.tokens);
  std::vector<uint8_t> bytes;
  try {
    Checkpoint c = checkpoint;
    c.model_fingerprint = config_.model_fingerprint;
    bytes = encode_checkpoint(c);
  } catch (const CheckpointError& e) {
    spdlog::error("kv checkpoints: cannot encode a checkpoint of {} tokens: {}", checkpoint.tokens.size(), e.what());
    emit("reject", "encode_failed", 0);
    return std::nullopt;
  }
  if (bytes.size() > config_.budget_bytes) {
    spdlog::warn(
        "kv checkpoints: a checkpoint of {} tokens ({:.1f} MiB) exceeds the disk budget ({:.1f} MiB); not written",
        checkpoint.tokens.size(), double(bytes.size()) / (1 << 20), double(config_.budget_bytes) / (1 << 20));
    emit("reject", "too_large", bytes.size());
    return std::nullopt;
  }
  if (!ensure_dir_locked()) {
    emit("reject", "no_directory", bytes.size());
    return std::nullopt;
  }
  const uint64_t need = bytes.size() + config_.free_margin_bytes;
  if (auto free = config_.free_bytes ? config_.free_bytes(config_.dir) : statvfs_free_bytes(config_.dir);
      free && *free < need) {
    set_health_locked(
        "no_space",
        fmt::format("{} has {:.1f} MiB free, a checkpoint of {:.1f} MiB needs {:.1f} MiB with "
                    "the {:.1f} MiB margin (no_space); not written",
                    config_.dir.string(), mib(*free), mib(bytes.size()), mib(need), mib(config_.free_margin_bytes)));
    emit("reject", "no_space", bytes.size());
    return std::nullopt;
  }
  // Make room first, so a full budget does not turn into a full disk.
  std::vector<std::string> spare(keep.begin(), keep.end());
  spare.push_back(name);
  const uint64_t old = index_.count(name) ? index_[name].bytes : 0;
  if (bytes_ - old + bytes.size() > config_.budget_bytes) {
    bytes_ += bytes.size();  // as if written, so eviction makes room for it
    evict_locked(name, spare);
    bytes_ -= bytes.size();
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    write_file_atomically(config_.dir, name, bytes, after_partial_write);
  } catch (const std::system_error& e) {
    const std::string reason = write_failure_reason(e);
    set_health_locked(reason, fmt::format("{} ({})", e.what(), reason));
    emit("reject", reason, bytes.size());
    return std::nullopt;
  }
  set_health_locked({}, {});
  Entry& e = index_[name];
  bytes_ = bytes_ - e.bytes + bytes.size();
  const double hits = e.hits;
  e.tokens = checkpoint.tokens;
  e.bytes = bytes.size();
  e.hits = hits;
  e.last_used_unix = unix_now();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("kv checkpoint stored: {} tokens, {:.1f} MiB, reason={}, {:.0f} ms, {}", checkpoint.tokens.size(),
               double(bytes.size()) / (1 << 20), checkpoint_reason_name(checkpoint.reason), secs * 1000, name);
  emit("write", checkpoint_reason_name(checkpoint.reason), bytes.size());
  if (bytes_ > config_.budget_bytes) evict_locked(name, spare);
  return name;
}

void DiskStore::evict_locked(const std::string& written, std::span<const std::string> keep) {
  const double now = unix_now();
  while (bytes_ > config_.budget_bytes) {
    const std::string* victim = nullptr;
    double victim_value = 0, victim_used = 0;
    for (const auto& [name, e] : index_) {
      if (name == written || std::find(keep.begin(), keep.end(), name) != keep.end()) continue;
      const double v =
          checkpoint_value(e.hits, now - e.last_used_unix, config_.hit_half_life_seconds, e.tokens.size(), e.bytes);
      if (!victim || v < victim_value || (v == victim_value && e.last_used_unix < victim_used)) {
        victim = &name;
        victim_value = v;
        victim_used = e.last_used_unix;
      }
    }
    if (!victim) return;  // only protected checkpoints left
    const std::string name = *victim;
    spdlog::info("kv checkpoint evicted (disk budget): {} tokens, {}", index_[name].tokens.size(), name);
    remove_locked(name, "evict", "budget");
  }
}

void DiskStore::remove(const std::string& name, std::string_view reason) {
  std::lock_guard lock(mu_);
  remove_locked(name, "remove", reason);
}

void DiskStore::remove_locked(const std::string& name, std::string_view event, std::string_view reason) {
  std::error_code ec;
  uint64_t bytes = 0;
  if (auto it = index_.find(name); it != index_.end()) {
    bytes = it->second.bytes;
    bytes_ -= bytes;
    index_.erase(it);
  }
  fs::remove(config_.dir / name, ec);
  if (ec) spdlog::warn("kv checkpoints: cannot remove {}: {}", name, ec.message());
  emit(event, reason, bytes);
}

void DiskStore::for_each_contracts(const std::function<void(const std::string&)>& fn) const {
  std::vector<std::pair<double, std::string>> order;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, e] : index_) order.emplace_back(e.last_used_unix, name);
  }
  std::sort(order.begin(), order.end());
  for (const auto& [used, name] : order) {
    try {
      std::string image = read_checkpoint_contracts(config_.dir / name);
      if (!image.empty()) fn(image);
    } catch (const CheckpointError& e) {
      spdlog::warn("kv checkpoints: contract records of {} unreadable: {}", name, e.what());
    }
  }
}

size_t DiskStore::files() const {
  std::lock_guard lock(mu_);
  return index_.size();
}

uint64_t DiskStore::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace ds4::cache
