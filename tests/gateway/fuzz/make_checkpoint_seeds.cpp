// Writes the seed corpus of checkpoint_loader_fuzz: well-formed KV checkpoint files as the store
// writes them (encode_checkpoint, with contract records from a real ContractStore image), each
// behind the fuzzer's flag byte (see checkpoint_loader_fuzz.cpp: 0x07 repairs every checksum
// and names the file after its tokens; 0x00 loads the bytes as they are; 0x0d runs the store
// for another model). The checked-in corpus in corpus-checkpoint/ was made with it:
//   build/tests/gateway/checkpoint_fuzz_seeds tests/gateway/fuzz/corpus-checkpoint
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gateway/cache/checkpoint_file.hpp"
#include "gateway/protocol/contract_store.hpp"

namespace {

void write_seed(const std::filesystem::path& dir, const std::string& name, uint8_t flags,
                const ds4::cache::Checkpoint& c) {
  std::vector<uint8_t> bytes = ds4::cache::encode_checkpoint(c);
  std::ofstream out(dir / name, std::ios::binary);
  out.put(static_cast<char>(flags));
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::string contract_image() {
  ds4::protocol::ContractStore store;
  ds4::protocol::TurnContract plain;
  plain.fingerprint = 0x1234;
  plain.content = "Hello there.";
  store.remember(plain);
  ds4::protocol::TurnContract tools;
  tools.fingerprint = 0x5678;
  tools.reasoning = "The user wants the weather; call the tool.";
  tools.content = "";
  tools.dsml_block = "<|DSML|function_calls>...</|DSML|function_calls>";
  tools.calls.push_back({"call_0001", "get_weather", R"({"city":"Paris"})"});
  tools.calls.push_back({"call_0002", "get_time", R"({"tz":"CET"})"});
  store.remember(tools);
  return store.serialize();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  ds4::cache::Checkpoint one;
  one.model_fingerprint = 0x9e3779b97f4a7c15ULL;
  one.reason = ds4::cache::CheckpointReason::Cold;
  one.created_unix = 1764547200;
  one.tokens = {0};
  write_seed(dir, "one_token.kvc", 0x07, one);

  ds4::cache::Checkpoint turn = one;
  turn.reason = ds4::cache::CheckpointReason::Turn;
  turn.tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  turn.contracts = contract_image();
  for (int i = 0; i < 64; i++) turn.state.push_back(uint8_t(i * 7));
  write_seed(dir, "turn_with_contracts.kvc", 0x07, turn);
  write_seed(dir, "turn_as_is.kvc", 0x04, turn);
  write_seed(dir, "turn_foreign_model.kvc", 0x0d, turn);

  ds4::cache::Checkpoint big = one;
  big.reason = ds4::cache::CheckpointReason::Shutdown;
  for (int i = 0; i < 200; i++) big.tokens.push_back(i * 131 % 4096);
  big.state.assign(1024, 0xab);
  write_seed(dir, "long_no_contracts.kvc", 0x05, big);
  return 0;
}
