// See cuda_emulator.hpp. The fibers are Boost.Context's (a user-space stack switch of a few
// instructions; ucontext's swapcontext makes a system call per switch, far too slow for a barrier
// per shuffle), their stacks from a pool reused across blocks. One scheduler runs the fibers of a
// block round robin, each until it waits at a barrier or returns.
#include "tests/engine/cuda/cuda_emulator.hpp"

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

namespace ds4::cuda::emu {
namespace {

constexpr size_t kStackBytes = 128 * 1024;

struct Gate {
  unsigned expected = 0, arrived = 0;
  uint64_t generation = 0;
};

struct Warp {
  Gate gate;
  uint64_t lanes[2][32] = {};    // double buffered: shuffle k uses lanes[k % 2]
  uint32_t wide[2][32][8] = {};  // the same for gather()
};

namespace ctx = boost::context;

struct Fiber {
  ctx::fiber context;  // the suspended fiber (empty once it returned)
  unsigned tid = 0;
  bool done = false;
  const Gate* waiting = nullptr;  // the gate this fiber waits at, until its generation moves on
  uint64_t waiting_generation = 0;
  uint64_t shuffles = 0;
};

struct State {
  std::vector<Fiber> fibers;  // stacks reused across blocks and launches
  std::vector<Warp> warps;
  Gate block_gate;
  std::vector<unsigned char> dynamic;
  const std::function<void()>* kernel = nullptr;
  Fiber* current = nullptr;
  ctx::fiber scheduler;  // the suspended scheduler, while a fiber runs
  ctx::pooled_fixedsize_stack stacks{kStackBytes};
};
State state;

void to_scheduler() { state.scheduler = std::move(state.scheduler).resume(); }

void start_fiber(Fiber& f) {
  f.context = ctx::fiber(std::allocator_arg, state.stacks, [](ctx::fiber&& scheduler) {
    state.scheduler = std::move(scheduler);
    (*state.kernel)();
    state.current->done = true;
    return std::move(state.scheduler);
  });
}

void resume(Fiber& f) {
  state.current = &f;
  threadIdx = {f.tid, 0, 0};
  f.context = std::move(f.context).resume();
}

// Arrive at `g`; the last arrival opens it for all, the others wait for the next generation.
void arrive(Gate& g) {
  if (++g.arrived == g.expected) {
    g.arrived = 0;
    g.generation++;
    return;
  }
  state.current->waiting = &g;
  state.current->waiting_generation = g.generation;
  to_scheduler();
}

void run_block(unsigned block) {
  for (unsigned t = 0; t < block; t++) {
    Fiber& f = state.fibers[t];
    f.tid = t;
    f.done = false;
    f.waiting = nullptr;
    f.shuffles = 0;
    start_fiber(f);
  }
  state.block_gate = {block, 0, 0};
  for (unsigned w = 0; w < state.warps.size(); w++) {
    state.warps[w].gate = {std::min(32u, block - 32 * w), 0, 0};
  }
  std::fill(state.dynamic.begin(), state.dynamic.end(), 0xff);
  for (unsigned live = block; live > 0;) {
    bool progressed = false;
    for (unsigned t = 0; t < block; t++) {
      Fiber& f = state.fibers[t];
      if (f.done || (f.waiting != nullptr && f.waiting->generation == f.waiting_generation)) continue;
      f.waiting = nullptr;
      resume(f);
      progressed = true;
      live -= f.done ? 1 : 0;
    }
    if (!progressed) {
      std::fprintf(stderr, "cuda emulator: block %u deadlocked (a barrier or shuffle some thread never reaches)\n",
                   blockIdx.x);
      std::abort();
    }
  }
}

}  // namespace

void launch(unsigned grid, unsigned block, size_t dynamic_shared, const std::function<void()>& kernel) {
  if (block == 0 || block > 1024) {
    std::fprintf(stderr, "cuda emulator: bad block size %u\n", block);
    std::abort();
  }
  if (state.fibers.size() < block) state.fibers.resize(block);
  state.warps.assign((block + 31) / 32, Warp{});
  state.dynamic.assign(dynamic_shared, 0xff);
  state.kernel = &kernel;
  blockDim = {block, 1, 1};
  gridDim = {grid, 1, 1};
  for (unsigned b = 0; b < grid; b++) {
    blockIdx = {b, 0, 0};
    run_block(block);
  }
  state.kernel = nullptr;
  state.current = nullptr;
}

void sync_block() { arrive(state.block_gate); }

uint64_t exchange(uint64_t mine, unsigned src) {
  Fiber& f = *state.current;
  Warp& w = state.warps[f.tid / 32];
  uint64_t* lanes = w.lanes[f.shuffles++ % 2];
  lanes[f.tid % 32] = mine;
  arrive(w.gate);
  if (32 * (f.tid / 32) + src >= blockDim.x) {
    std::fprintf(stderr, "cuda emulator: shuffle from lane %u, outside the block\n", src);
    std::abort();
  }
  return lanes[src];
}

void* dynamic_shared() { return state.dynamic.data(); }

void gather(const uint32_t* mine, unsigned words, uint32_t* all) {
  if (words > 8) {
    std::fprintf(stderr, "cuda emulator: gather of %u words (at most 8)\n", words);
    std::abort();
  }
  Fiber& f = *state.current;
  Warp& w = state.warps[f.tid / 32];
  uint32_t(*wide)[8] = w.wide[f.shuffles++ % 2];
  std::memcpy(wide[f.tid % 32], mine, words * sizeof(uint32_t));
  arrive(w.gate);
  const unsigned lanes = std::min(32u, blockDim.x - 32 * (f.tid / 32));
  if (lanes != 32 && words != 0) {
    std::fprintf(stderr, "cuda emulator: gather in a partial warp\n");
    std::abort();
  }
  for (unsigned l = 0; l < lanes && words != 0; l++) std::memcpy(all + l * words, wide[l], words * sizeof(uint32_t));
}

}  // namespace ds4::cuda::emu
