// The default batched step: each entry on its own sequence, one after another. See
// engine_backend.hpp.
#include "gateway/serving/engine_backend.hpp"

namespace ds4::serving {

void EngineBackend::step(std::span<StepEntry> entries) {
  for (StepEntry& e : entries) {
    try {
      if (e.all_logits) e.row_logits = e.sequence->verify(e.tokens);
      else e.sequence->append(e.tokens);
    } catch (...) {
      e.error = std::current_exception();
    }
  }
}

}  // namespace ds4::serving
