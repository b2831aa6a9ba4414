#pragma once
// Builds deliberately broken copies of a valid DS4 GGUF for the layout and inspect tests: a
// tensor dropped, retyped or reshaped (its data then zero-filled at the new size), an extra
// tensor, a metadata key removed or replaced.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_reader.hpp"
#include "engine/gguf/gguf_writer.hpp"

namespace ds4::gguf::test {

struct TensorEdit {
  bool drop = false;
  std::optional<quant::Type> type{};
  std::optional<std::vector<uint64_t>> dims{};
};

struct Variant {
  std::function<std::optional<TensorEdit>(const TensorInfo&)> tensor;  // nullopt: keep as is
  std::vector<std::string> drop_keys;
  std::vector<std::pair<std::string, Value>> set_keys;
  std::vector<std::string> extra_tensors;  // F32 [32] tensors appended
};

inline GgufWriter make_variant(const GgufFile& src, const Variant& v) {
  GgufWriter w;
  for (const KeyValue& kv : src.metadata()) {
    bool drop = false;
    for (const auto& k : v.drop_keys) drop |= k == kv.key;
    if (!drop) w.set(kv.key, kv.value);
  }
  for (const auto& [k, val] : v.set_keys) w.set(k, val);
  for (const TensorInfo& t : src.tensors()) {
    std::optional<TensorEdit> e = v.tensor ? v.tensor(t) : std::nullopt;
    if (!e) {
      w.add_tensor(t.name, t.type, t.dims, src.bytes(t));
    } else if (!e->drop) {
      w.add_tensor(t.name, e->type.value_or(t.type), e->dims.value_or(t.dims),
                   [](std::span<std::byte> d) { std::fill(d.begin(), d.end(), std::byte{0}); });
    }
  }
  for (const auto& name : v.extra_tensors)
    w.add_tensor(name, quant::Type::F32, {32},
                 [](std::span<std::byte> d) { std::fill(d.begin(), d.end(), std::byte{0}); });
  return w;
}

inline std::optional<TensorEdit> drop_named(const TensorInfo& t, const std::string& name) {
  if (t.name != name) return std::nullopt;
  return TensorEdit{.drop = true};
}

}  // namespace ds4::gguf::test
