// libFuzzer target: the KV checkpoint loader on arbitrary file bytes — what the daemon does at
// start with whatever lies in cache.dir (DiskStore's index rebuild), then on a prefix hit (the
// whole file) and for the echo contracts (the contract records, merged into a ContractStore).
// Every section carries a checksum, so the first input byte holds flags (repair checksums, repair
// the contract trailer, name the file after its tokens, another model); the rest is the file. A
// violated invariant aborts, and so does any exception but CheckpointError / ContractStoreError.
// The flags and invariants: docs/faults.md §checkpoint-loader-target.
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gateway/cache/checkpoint_file.hpp"
#include "gateway/cache/disk_store.hpp"
#include "gateway/protocol/contract_store.hpp"

namespace {

namespace fs = std::filesystem;
using ds4::cache::Checkpoint;
using ds4::cache::CheckpointError;

// The layout of docs/kv-checkpoints.md: a 48-byte header ending in its XXH64, then a table of
// three 32-byte entries {kind, reserved, offset, size, XXH64} and the table's XXH64.
constexpr size_t kHeaderBytes = 48, kEntryBytes = 32, kSections = 3;
constexpr size_t kPrefixBytes = kHeaderBytes + kSections * kEntryBytes + 8;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant broken: %s\n", what);
    std::abort();
  }
}

template <class T>
T get(const std::vector<uint8_t>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
template <class T>
void put(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

// Recomputes every checksum the loader checks (sections whose range lies inside the file).
void repair_checksums(std::vector<uint8_t>& b, bool contracts_trailer) {
  if (b.size() < kPrefixBytes) return;
  for (size_t i = 0; i < kSections; i++) {
    const size_t e = kHeaderBytes + i * kEntryBytes;
    const uint64_t off = get<uint64_t>(b, e + 8), size = get<uint64_t>(b, e + 16);
    if (off > b.size() || size > b.size() - off) continue;
    if (i == 1 && contracts_trailer && size >= 8) {
      const std::string_view body(reinterpret_cast<const char*>(b.data() + off), size - 8);
      put<uint64_t>(b, off + size - 8, ds4::protocol::fnv1a64(body));
    }
    put<uint64_t>(b, e + 24, XXH64(b.data() + off, size, 0));
  }
  put<uint64_t>(b, kHeaderBytes - 8, XXH64(b.data(), kHeaderBytes - 8, 0));
  put<uint64_t>(b, kHeaderBytes + kSections * kEntryBytes, XXH64(b.data() + kHeaderBytes, kSections * kEntryBytes, 0));
}

bool same(const Checkpoint& a, const Checkpoint& b) {
  return a.model_fingerprint == b.model_fingerprint && a.reason == b.reason && a.created_unix == b.created_unix &&
         a.tokens == b.tokens && a.contracts == b.contracts && a.state == b.state;
}

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    fs::path d = base / ("ds4d-checkpoint-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

// Merges a contract records image; checks what it accepts survives serialize -> deserialize.
void check_contracts(const std::string& image) {
  ds4::protocol::ContractStore store;
  try {
    store.merge(image);
  } catch (const ds4::protocol::ContractStoreError&) {
    return;
  }
  ds4::protocol::ContractStore again;
  again.deserialize(store.serialize());  // must not throw: we wrote it
  check(again.size() == store.size(), "contract records changed in a serialize/deserialize round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);  // every rejected file logs a warning
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::vector<uint8_t> file(data + 1, data + size);
  if (flags & 1) repair_checksums(file, (flags & 2) != 0);

  // 1. The in-memory decoder.
  std::optional<Checkpoint> decoded;
  try {
    decoded = ds4::cache::decode_checkpoint(file);
  } catch (const CheckpointError& e) {
    static const std::set<std::string> kinds = {"corrupt", "truncated", "old_version"};
    check(kinds.count(e.kind) == 1, "decode_checkpoint threw an unknown error kind");
    check(std::strlen(e.what()) > 0, "a CheckpointError without a message");
  }
  if (decoded) {
    const std::vector<uint8_t> again = ds4::cache::encode_checkpoint(*decoded);
    check(again.size() == file.size(), "an accepted checkpoint re-encodes to a different size");
    check(same(ds4::cache::decode_checkpoint(again), *decoded), "an accepted checkpoint does not round-trip");
  }

  // 2. The store, as at daemon start: one file in its directory.
  const uint64_t file_fingerprint = file.size() >= 24 ? get<uint64_t>(file, 16) : 0;
  std::optional<std::vector<ds4::cache::Token>> tokens;
  std::optional<ds4::cache::CheckpointHeader> header;
  const fs::path& dir = scratch_dir();
  const fs::path probe = dir / ".probe";
  {
    FILE* f = std::fopen(probe.c_str(), "wb");
    check(f != nullptr, "cannot write the scratch file");
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
    try {
      header = ds4::cache::read_checkpoint_header(probe);
    } catch (const CheckpointError&) {
    }
    std::error_code ec;
    fs::remove(probe, ec);
  }
  if (decoded) check(header && header->tokens == decoded->tokens, "the header reader disagrees with the decoder");
  if (header) check(header->file_bytes == file.size(), "the header reader reports another file size");
  const std::string name = (flags & 4) && header
                               ? ds4::cache::checkpoint_file_name(header->model_fingerprint, header->tokens)
                               : std::string("0123456789abcdef0123456789abcdef") + ds4::cache::kCheckpointSuffix;
  {
    FILE* f = std::fopen((dir / name).c_str(), "wb");
    check(f != nullptr, "cannot write the scratch checkpoint");
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
  }
  ds4::cache::DiskStoreConfig config;
  config.dir = dir;
  config.budget_bytes = uint64_t(1) << 30;
  config.model_fingerprint = (flags & 8) ? file_fingerprint + 1 : file_fingerprint;
  if (config.model_fingerprint == 0) config.model_fingerprint = 1;  // 0 would turn the store off
  ds4::cache::DiskStore store(config);
  const bool should_index = header && header->model_fingerprint == config.model_fingerprint &&
                            ds4::cache::checkpoint_file_name(header->model_fingerprint, header->tokens) == name;
  check(store.files() == (should_index ? 1u : 0u), "the index kept a file it must reject, or rejected a good one");
  check(fs::exists(dir / name) == should_index, "a rejected file was not removed (or a kept one was)");
  if (should_index) {
    check(store.bytes() == file.size(), "the index counts another size");
    const auto match = store.find(header->tokens, header->tokens.size());
    check(match && match->name == name && match->tokens == header->tokens.size(), "an indexed checkpoint is not found");
    std::vector<std::string> images;
    store.for_each_contracts([&](const std::string& image) { images.push_back(image); });
    if (decoded && !decoded->contracts.empty())
      check(images.size() == 1 && images[0] == decoded->contracts, "the store hands out other contract records");
    for (const auto& image : images) check_contracts(image);
    const std::optional<Checkpoint> loaded = store.load(name);
    check(loaded.has_value() == decoded.has_value(), "load() disagrees with decode_checkpoint");
    if (loaded) check(same(*loaded, *decoded), "load() returns another checkpoint than the decoder");
    else check(store.files() == 0 && !fs::exists(dir / name), "a file that failed to load was kept");
  }
  if (decoded) check_contracts(decoded->contracts);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove(entry.path(), ec);
  return 0;
}
