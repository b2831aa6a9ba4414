// Launches kernels/embed.cuh: one block of 256 threads per token.
#include "engine/cuda/embed.hpp"

#include <stdexcept>
#include <string>

namespace ds4::cuda {

void embed(DeviceSpan tokens, int64_t T, DeviceSpan table, int64_t n_vocab, int64_t n_embd, int64_t n_hc, DeviceSpan H,
           DeviceSpan error) {
  if (T < 0 || T > (int64_t(1) << 31) - 1 || n_vocab <= 0 || n_vocab > (int64_t(1) << 31) - 1 || n_embd <= 0 ||
      n_hc <= 0 || n_hc > 16 || tokens.bytes() < sizeof(int32_t) * static_cast<size_t>(T) ||
      table.bytes() < sizeof(uint16_t) * static_cast<size_t>(n_vocab * n_embd) ||
      H.bytes() < sizeof(float) * static_cast<size_t>(T * n_hc * n_embd) || error.bytes() < sizeof(int32_t))
    throw std::invalid_argument("CUDA embed: " + std::to_string(T) + " tokens of " + std::to_string(n_hc) + " x " +
                                std::to_string(n_embd) + " (vocabulary " + std::to_string(n_vocab) +
                                ") do not fit the buffers");
  if (T == 0) return;
  uint64_t tp = tokens.ptr(), ep = table.ptr(), hp = H.ptr(), errp = error.ptr();
  auto hc = static_cast<int32_t>(n_hc);
  void* args[] = {&tp, &ep, &n_vocab, &n_embd, &hc, &hp, &errp};
  Device::open().launch("ds4_embed", static_cast<unsigned>(T), 256, 0, args);
}

void check_embed_error(DeviceSpan error) {
  if (take_error_word(error)) throw std::out_of_range("CUDA embed: a token id is outside the vocabulary");
}

}  // namespace ds4::cuda
