#pragma once
// A hook for tools that need to see what the weights are multiplied with (the importance matrix
// collector, `ds4ctl imatrix`): when LoadOptions::activation_observer is set, the forward pass
// hands it every activation row right before it enters a projection -- the dense projections
// (attention, shared expert, router, compressor, indexer, output) and, per selected expert, the
// routed experts' gate/up inputs and down inputs. The row is the float input, before the
// activation quantization the kernels apply. When the pointer is null (the default) the only
// cost is one branch per projection; the arithmetic is never touched, so logits are
// bit-identical with and without an observer.
#include <cstdint>
#include <string_view>

namespace ds4 {

class ActivationObserver {
 public:
  virtual ~ActivationObserver() = default;
  // `tensor` is the GGUF weight name, `expert` the routed expert (-1 for dense weights), `row`
  // `cols` floats. Called on the thread that runs the context, in forward order.
  virtual void observe(std::string_view tensor, int expert, const float* row, int64_t cols) = 0;
};

}  // namespace ds4
