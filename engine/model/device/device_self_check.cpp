// See device_self_check.hpp.
#include "engine/model/device/device_self_check.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/device/device_forward.hpp"
#include "engine/model/forward.hpp"
#include "engine/model/model_impl.hpp"

namespace ds4::model::device {
namespace {

constexpr uint32_t kCapacity = 32;

std::string first_difference(const char* step, const std::vector<float>& dev, const std::vector<float>& cpu) {
  for (size_t i = 0; i < dev.size(); i++)
    if (std::memcmp(&dev[i], &cpu[i], sizeof(float)) != 0)
      return std::string(step) + " logit " + std::to_string(i) + " of " + std::to_string(dev.size()) + ": device " +
             std::to_string(dev[i]) + ", CPU " + std::to_string(cpu[i]);
  return "";
}

}  // namespace

std::string self_check(const Model& model) {
  const Model::Impl& m = model.impl();
  if (!m.device) throw std::invalid_argument("self_check: the model is not loaded for the device");
  const uint32_t V = m.cfg.n_vocab;
  // Spread over the vocabulary, deterministic: the same check on every start.
  std::vector<int32_t> tokens(kSelfCheckPrefill + 1);
  for (size_t i = 0; i < tokens.size(); i++) tokens[i] = int32_t((uint64_t(i) * 2654435761u + 7) % V);

  std::vector<LayerState> cpu_layers = make_layer_states(m.cfg, kCapacity, 0);
  DeviceForward dev(m, *m.device_scratch, cpu_layers);
  dev.upload_state(cpu_layers);
  std::vector<float> want(V), got(V);
  const char* steps[] = {"prefill", "decode"};
  for (int step = 0; step < 2; step++) {
    const int T = step == 0 ? kSelfCheckPrefill : 1;
    const uint32_t pos0 = step == 0 ? 0 : kSelfCheckPrefill;
    forward_batch(m, cpu_layers, tokens.data() + pos0, T, pos0, false, want.data(), *m.cpu_scratch.take());
    dev.forward(tokens.data() + pos0, T, pos0, false, got.data());
    if (std::string d = first_difference(steps[step], got, want); !d.empty()) return d;
  }
  return "";
}

}  // namespace ds4::model::device
