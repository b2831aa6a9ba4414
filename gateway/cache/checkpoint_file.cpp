// Checkpoint file encoding, checking and crash-safe writing. See checkpoint_file.hpp and
// docs/kv-checkpoints.md.
//
// Layout (little-endian):
//   header   u8[8] "DS4DKVCP" | u32 format version | u32 reason | u64 model fingerprint |
//            u64 created (unix s) | u32 token count | u32 section count (3) | u64 XXH64(header)
//   table    3 x { u32 kind | u32 reserved | u64 offset | u64 size | u64 XXH64(section) } |
//            u64 XXH64(table)
//   sections tokens (kind 1: i32 x count) | contracts (kind 2) | engine state (kind 3),
//            contiguous, the last one ending at the end of the file.
#include "gateway/cache/checkpoint_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace ds4::cache {
namespace {

constexpr char kMagic[8] = {'D', 'S', '4', 'D', 'K', 'V', 'C', 'P'};
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 4 + 4 + 8;  // 48
constexpr uint32_t kSections = 3;
constexpr size_t kEntryBytes = 4 + 4 + 8 + 8 + 8;            // 32
constexpr size_t kTableBytes = kSections * kEntryBytes + 8;  // 104
constexpr size_t kPrefixBytes = kHeaderBytes + kTableBytes;
enum : uint32_t { kTokens = 1, kContracts = 2, kState = 3 };

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
template <class T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

struct Section {
  uint32_t kind = 0;
  uint64_t offset = 0, size = 0, hash = 0;
};

struct Prefix {
  CheckpointHeader header;
  uint32_t n_tokens = 0;
  Section sections[kSections];
};

// Parses and checks header + table; `file_bytes` is the real size of the file.
Prefix parse_prefix(const uint8_t* p, size_t n, uint64_t file_bytes) {
  if (n < kPrefixBytes)
    throw CheckpointError("truncated",
                          fmt::format("truncated: {} bytes, the header and section table need {}", n, kPrefixBytes));
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0)
    throw CheckpointError("corrupt", "not a ds4d KV checkpoint (bad magic)");
  if (get<uint64_t>(p + kHeaderBytes - 8) != XXH64(p, kHeaderBytes - 8, 0))
    throw CheckpointError("corrupt", "header checksum mismatch (corrupted)");
  Prefix out;
  const uint32_t version = get<uint32_t>(p + 8);
  if (version != kCheckpointFormatVersion)
    throw CheckpointError("old_version",
                          fmt::format("format version {} (this build reads {})", version, kCheckpointFormatVersion));
  out.header.reason = static_cast<CheckpointReason>(get<uint32_t>(p + 12));
  out.header.model_fingerprint = get<uint64_t>(p + 16);
  out.header.created_unix = get<uint64_t>(p + 24);
  out.n_tokens = get<uint32_t>(p + 32);
  if (get<uint32_t>(p + 36) != kSections) throw CheckpointError("corrupt", "unexpected section count");
  const uint8_t* t = p + kHeaderBytes;
  if (get<uint64_t>(t + kSections * kEntryBytes) != XXH64(t, kSections * kEntryBytes, 0))
    throw CheckpointError("corrupt", "section table checksum mismatch (corrupted)");
  uint64_t at = kPrefixBytes;
  for (uint32_t i = 0; i < kSections; i++) {
    Section& s = out.sections[i];
    s.kind = get<uint32_t>(t + i * kEntryBytes);
    s.offset = get<uint64_t>(t + i * kEntryBytes + 8);
    s.size = get<uint64_t>(t + i * kEntryBytes + 16);
    s.hash = get<uint64_t>(t + i * kEntryBytes + 24);
    if (s.kind != i + 1 || s.offset != at || s.size > file_bytes)
      throw CheckpointError("corrupt", "malformed section table");
    at += s.size;
  }
  if (at != file_bytes)
    throw CheckpointError(
        "truncated", fmt::format("file is {} bytes, its sections end at {} (truncated or padded)", file_bytes, at));
  if (out.sections[0].size != uint64_t(out.n_tokens) * sizeof(Token))
    throw CheckpointError("corrupt", "token section size does not match the token count");
  if (out.n_tokens == 0) throw CheckpointError("corrupt", "checkpoint holds no tokens");
  out.header.file_bytes = file_bytes;
  return out;
}

void check_section(const Section& s, const uint8_t* data, const char* what) {
  if (XXH64(data, s.size, 0) != s.hash)
    throw CheckpointError("corrupt", fmt::format("{} section checksum mismatch (corrupted)", what));
}

std::vector<Token> tokens_of(const uint8_t* data, uint32_t n) {
  std::vector<Token> out(n);
  std::memcpy(out.data(), data, size_t(n) * sizeof(Token));
  return out;
}

std::vector<uint8_t> read_bytes(const std::filesystem::path& path, uint64_t offset, uint64_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError("io", "cannot open: " + std::string(std::strerror(errno)));
  in.seekg(std::streamoff(offset));
  std::vector<uint8_t> out(n);
  in.read(reinterpret_cast<char*>(out.data()), std::streamsize(n));
  if (uint64_t(in.gcount()) != n) throw CheckpointError("truncated", "short read (file changed or truncated)");
  return out;
}

uint64_t file_size_of(const std::filesystem::path& path) {
  std::error_code ec;
  const uint64_t n = std::filesystem::file_size(path, ec);
  if (ec) throw CheckpointError("io", "cannot stat: " + ec.message());
  return n;
}

[[noreturn]] void throw_errno(const std::string& what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(), what + " " + path.string());
}

}  // namespace

const char* checkpoint_reason_name(CheckpointReason reason) {
  switch (reason) {
    case CheckpointReason::Cold: return "cold";
    case CheckpointReason::Interval: return "interval";
    case CheckpointReason::Evict: return "evict";
    case CheckpointReason::Shutdown: return "shutdown";
    case CheckpointReason::Turn: return "turn";
  }
  return "unknown";
}

std::vector<uint8_t> encode_checkpoint(const Checkpoint& c) {
  if (c.tokens.empty()) throw CheckpointError("corrupt", "a checkpoint needs at least one token");
  if (c.tokens.size() > UINT32_MAX) throw CheckpointError("corrupt", "too many tokens for one checkpoint");
  const uint64_t sizes[kSections] = {c.tokens.size() * sizeof(Token), c.contracts.size(), c.state.size()};
  const uint8_t* datas[kSections] = {reinterpret_cast<const uint8_t*>(c.tokens.data()),
                                     reinterpret_cast<const uint8_t*>(c.contracts.data()), c.state.data()};
  std::vector<uint8_t> out;
  out.reserve(kPrefixBytes + sizes[0] + sizes[1] + sizes[2]);
  out.resize(sizeof kMagic);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out, kCheckpointFormatVersion);
  put(out, static_cast<uint32_t>(c.reason));
  put(out, c.model_fingerprint);
  put(out, c.created_unix);
  put(out, static_cast<uint32_t>(c.tokens.size()));
  put(out, kSections);
  put(out, uint64_t(XXH64(out.data(), out.size(), 0)));
  uint64_t at = kPrefixBytes;
  for (uint32_t i = 0; i < kSections; i++) {
    put(out, i + 1);
    put(out, uint32_t(0));
    put(out, at);
    put(out, sizes[i]);
    put(out, uint64_t(XXH64(datas[i], sizes[i], 0)));
    at += sizes[i];
  }
  put(out, uint64_t(XXH64(out.data() + kHeaderBytes, kSections * kEntryBytes, 0)));
  for (uint32_t i = 0; i < kSections; i++) out.insert(out.end(), datas[i], datas[i] + sizes[i]);
  return out;
}

Checkpoint decode_checkpoint(std::span<const uint8_t> bytes) {
  Prefix p = parse_prefix(bytes.data(), bytes.size(), bytes.size());
  const char* names[kSections] = {"tokens", "contracts", "state"};
  for (uint32_t i = 0; i < kSections; i++) check_section(p.sections[i], bytes.data() + p.sections[i].offset, names[i]);
  Checkpoint c;
  c.model_fingerprint = p.header.model_fingerprint;
  c.reason = p.header.reason;
  c.created_unix = p.header.created_unix;
  c.tokens = tokens_of(bytes.data() + p.sections[0].offset, p.n_tokens);
  const auto* cs = reinterpret_cast<const char*>(bytes.data() + p.sections[1].offset);
  c.contracts.assign(cs, cs + p.sections[1].size);
  c.state.assign(bytes.data() + p.sections[2].offset, bytes.data() + p.sections[2].offset + p.sections[2].size);
  return c;
}

CheckpointHeader read_checkpoint_header(const std::filesystem::path& path) {
  const uint64_t size = file_size_of(path);
  if (size < kPrefixBytes)
    throw CheckpointError("truncated",
                          fmt::format("truncated: {} bytes, the header and section table need {}", size, kPrefixBytes));
  auto head = read_bytes(path, 0, kPrefixBytes);
  Prefix p = parse_prefix(head.data(), head.size(), size);
  auto tokens = read_bytes(path, p.sections[0].offset, p.sections[0].size);
  check_section(p.sections[0], tokens.data(), "tokens");
  p.header.tokens = tokens_of(tokens.data(), p.n_tokens);
  return p.header;
}

std::string read_checkpoint_contracts(const std::filesystem::path& path) {
  const uint64_t size = file_size_of(path);
  if (size < kPrefixBytes)
    throw CheckpointError("truncated",
                          fmt::format("truncated: {} bytes, the header and section table need {}", size, kPrefixBytes));
  auto head = read_bytes(path, 0, kPrefixBytes);
  Prefix p = parse_prefix(head.data(), head.size(), size);
  auto bytes = read_bytes(path, p.sections[1].offset, p.sections[1].size);
  check_section(p.sections[1], bytes.data(), "contracts");
  return std::string(bytes.begin(), bytes.end());
}

Checkpoint read_checkpoint(const std::filesystem::path& path) {
  const uint64_t size = file_size_of(path);
  return decode_checkpoint(read_bytes(path, 0, size));
}

std::string checkpoint_file_name(uint64_t model_fingerprint, std::span<const Token> tokens) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, &model_fingerprint, sizeof model_fingerprint);
  XXH3_128bits_update(st, tokens.data(), tokens.size() * sizeof(Token));
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return fmt::format("{:016x}{:016x}{}", h.high64, h.low64, kCheckpointSuffix);
}

void write_file_atomically(const std::filesystem::path& dir, const std::string& name, std::span<const uint8_t> bytes,
                           void (*after_partial_write)()) {
  const std::filesystem::path final_path = dir / name;
  const std::filesystem::path temp = dir / (std::string(kTempPrefix) + name + "-" + std::to_string(::getpid()));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw_errno("cannot create", temp);
  auto fail = [&](const char* what) {
    const int saved = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    errno = saved;
    throw_errno(what, temp);
  };
  size_t done = 0;
  bool hooked = after_partial_write == nullptr;
  while (done < bytes.size()) {
    size_t want = bytes.size() - done;
    if (!hooked) want = std::max<size_t>(1, bytes.size() / 2 - std::min(done, bytes.size() / 2));
    const ssize_t n = ::write(fd, bytes.data() + done, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write");
    }
    done += size_t(n);
    if (!hooked && done >= bytes.size() / 2) {
      hooked = true;
      after_partial_write();
    }
  }
  if (::fsync(fd) != 0) fail("cannot fsync");
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    throw_errno("cannot close", temp);
  }
  if (::rename(temp.c_str(), final_path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    throw_errno("cannot rename into", final_path);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw_errno("cannot open directory", dir);
  const int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) throw_errno("cannot fsync directory", dir);
}

}  // namespace ds4::cache
