#pragma once
// KV checkpoint files: one conversation prefix's engine state on disk, self-describing and
// self-checking, so the daemon can find it again after a restart and never loads a bad one.
//
// A file holds: the model fingerprint it belongs to, the exact tokens it covers, the contract
// records (echo contracts of the turns in those tokens) and the engine's state bytes, each
// section with its own XXH64, behind a header with its own XXH64. docs/kv-checkpoints.md
// describes the layout byte by byte. Anything that does not check out is a CheckpointError
// naming the file and the reason; the store removes such files.
//
// Writes are crash-safe: the bytes go to a temporary file in the same directory, which is
// fsync'ed, renamed over the final name, and the directory is fsync'ed. A crash at any point
// leaves either the previous file or the new one, never a half-written file under a final name.
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace ds4::cache {

using Token = int32_t;

inline constexpr uint32_t kCheckpointFormatVersion = 1;
inline constexpr const char* kCheckpointSuffix = ".kvc";
inline constexpr const char* kTempPrefix = ".tmp-";

// Why a checkpoint was written (kept in the file, shown in logs).
enum class CheckpointReason : uint32_t { Cold = 1, Interval = 2, Evict = 3, Shutdown = 4, Turn = 5 };
const char* checkpoint_reason_name(CheckpointReason reason);

struct Checkpoint {
  uint64_t model_fingerprint = 0;
  CheckpointReason reason = CheckpointReason::Cold;
  uint64_t created_unix = 0;
  std::vector<Token> tokens;   // exactly the tokens the state covers
  std::string contracts;       // ContractStore image (may be empty)
  std::vector<uint8_t> state;  // EngineSequence::snapshot()
};

// `kind` is a metric label: "corrupt", "truncated", "old_version" or "io".
struct CheckpointError : std::runtime_error {
  CheckpointError(std::string kind_, const std::string& message)
      : std::runtime_error(message), kind(std::move(kind_)) {}
  std::string kind;
};

// The part of a file the index needs: everything but the contract and state sections.
struct CheckpointHeader {
  uint64_t model_fingerprint = 0;
  CheckpointReason reason = CheckpointReason::Cold;
  uint64_t created_unix = 0;
  std::vector<Token> tokens;
  uint64_t file_bytes = 0;
};

// The file image of a checkpoint. Returns the bytes; the caller owns them.
std::vector<uint8_t> encode_checkpoint(const Checkpoint& checkpoint);
// Parses and checks a whole image (every section hash). Throws CheckpointError with the reason.
Checkpoint decode_checkpoint(std::span<const uint8_t> bytes);

// Reads the header and the tokens section of `path` (checking their hashes and that the file is
// as long as the section table says). Throws CheckpointError.
CheckpointHeader read_checkpoint_header(const std::filesystem::path& path);
// Reads and checks the whole file. Throws CheckpointError.
Checkpoint read_checkpoint(const std::filesystem::path& path);
// Reads and checks only the contract records section (restored at start, before any request is
// rendered, so echoes of turns from before a restart render as they were generated).
std::string read_checkpoint_contracts(const std::filesystem::path& path);

// The file name for a checkpoint of these tokens under this model: 16 hex digits of a hash and
// the suffix; no client bytes ever reach a file name.
std::string checkpoint_file_name(uint64_t model_fingerprint, std::span<const Token> tokens);

// Writes `bytes` to dir/name crash-safely (temp file, fsync, rename, fsync of the directory).
// Throws std::system_error with the path and errno text on failure (the temp file is removed).
// Test hook: a non-null `after_partial_write` is called after half the bytes are written (the
// kill -9 fault test uses it).
void write_file_atomically(const std::filesystem::path& dir, const std::string& name, std::span<const uint8_t> bytes,
                           void (*after_partial_write)() = nullptr);

}  // namespace ds4::cache
