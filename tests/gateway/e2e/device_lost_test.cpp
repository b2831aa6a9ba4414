// A GPU lost while serving (docs/cuda.md §device-lost), on the emulated device: after a turn that
// works, the device starts failing every call with CUDA_ERROR_ILLEGAL_ADDRESS, as a real context
// does after a faulting kernel. The turn in flight ends with an error naming it, the service turns
// Failed and refuses new work with 503 engine_lost (ds4d then exits to be restarted), instead of
// answering every later request with the same error from a dead device. And a batched pass that
// fails midway fails its entries rather than running them again.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "engine/loaded_model/loaded_model.hpp"
#include "gateway/serving/ds4_backend.hpp"
#include "gateway/serving/metrics.hpp"
#include "gateway/serving/service.hpp"
#include "tests/engine/cuda/emulated_driver.hpp"

namespace ds4::test {
namespace {

struct Sink : serving::GenerationSink {
  std::promise<serving::GenerationResult> done;
  bool on_text(std::string_view) override { return true; }
  void on_finished(const serving::GenerationResult& r) override { done.set_value(r); }
};

serving::GenerationJob job_for(const serving::EngineBackend& b, std::shared_ptr<Sink> sink) {
  serving::GenerationJob job;
  job.prompt = b.encode("<｜begin▁of▁sentence｜><｜User｜>Hello there<｜Assistant｜></think>");
  job.sampling.temperature = 0;
  job.max_tokens = 3;
  job.sink = std::move(sink);
  return job;
}

serving::GenerationResult run(serving::Service& s) {
  auto sink = std::make_shared<Sink>();
  auto fut = sink->done.get_future();
  EXPECT_FALSE(s.submit(job_for(*s.backend(), sink)).has_value());
  return fut.get();
}

TEST(DeviceLost, TheServiceStopsTakingWorkAndSaysWhy) {
  LoadOptions load;
  load.threads = 1;
  ContextOptions ctx;
  ctx.context_length = 128;
  LoadedModel m = load_model_on(cuda::Backend::Cuda, DS4D_AGENT_MODEL, load, [](const std::string&) {});
  auto backend = std::make_shared<serving::Ds4Backend>(std::move(m.model), std::move(m.tokenizer), "agent", ctx);
  serving::Metrics metrics;
  serving::Service service(serving::ServiceConfig{}, metrics);
  service.set_backend(backend);
  EXPECT_NE(run(service).finish, serving::FinishReason::Error);
  EXPECT_FALSE(service.engine_lost());

  cuda::emu::fail_from_now_on(700);
  const serving::GenerationResult r = run(service);
  cuda::emu::fail_from_now_on(0);
  EXPECT_EQ(r.finish, serving::FinishReason::Error);
  EXPECT_NE(r.error.find("CUDA_ERROR_ILLEGAL_ADDRESS (700); the CUDA context is lost"), std::string::npos) << r.error;
  EXPECT_TRUE(service.engine_lost());
  EXPECT_EQ(service.state(), serving::ServiceState::Failed);
  EXPECT_NE(service.failure().find("the engine cannot run anything more in this process"), std::string::npos)
      << service.failure();
  const auto refusal = service.submit(job_for(*backend, std::make_shared<Sink>()));
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->http_status, 503);
  EXPECT_EQ(refusal->code, "engine_lost");
}

// A batched pass that fails midway (the device out of memory as the pass grows its scratch: the
// last allocation of the step, in the output head, after every layer stored its rows) leaves its
// contexts half-updated. Each entry must fail, for the service to clear it; running the entries
// again one by one, as a refused step is, would compute on that state.
TEST(DeviceLost, ABatchedPassThatFailsMidwayFailsItsEntriesInsteadOfRunningThemAgain) {
  LoadOptions load;
  load.threads = 1;
  ContextOptions ctx;
  ctx.context_length = 64;
  // The same steps on two backends: the first counts the step's allocations, the second fails
  // the last of them.
  size_t step_allocations = 0;
  for (int round = 0; round < 2; round++) {
    LoadedModel m = load_model_on(cuda::Backend::Cuda, DS4D_AGENT_MODEL, load, [](const std::string&) {});
    serving::Ds4Backend backend(std::move(m.model), std::move(m.tokenizer), "agent", ctx);
    auto a = backend.new_sequence(), b = backend.new_sequence();
    const std::vector<serving::Token> first{5, 6}, rows_a{7, 8, 9, 10, 11, 12, 13, 14, 15},
        rows_b{20, 21, 22, 23, 24, 25, 26, 27, 28};
    a->append(first);
    b->append(first);
    std::vector<serving::StepEntry> entries{{a.get(), rows_a, false, {}, {}}, {b.get(), rows_b, true, {}, {}}};
    const size_t before = cuda::emu::allocations_made();
    if (round == 1) cuda::emu::fail_allocation_after(step_allocations - 1);
    backend.step(entries);
    if (round == 0) {
      step_allocations = cuda::emu::allocations_made() - before;
      ASSERT_GT(step_allocations, 0u) << "the step grew nothing: it cannot fail midway";
      EXPECT_FALSE(entries[0].error || entries[1].error);
      continue;
    }
    for (const serving::StepEntry& e : entries) {
      ASSERT_TRUE(e.error) << "an entry of the failed pass ran again on its half-updated context";
      try {
        std::rethrow_exception(e.error);
      } catch (const std::exception& x) {
        EXPECT_NE(std::string(x.what()).find("OUT_OF_MEMORY"), std::string::npos) << x.what();
      }
    }
    EXPECT_EQ(a->tokens().size(), first.size());
  }
}

}  // namespace
}  // namespace ds4::test
