// See cuda_emulator.hpp. The fibers switch with a few instructions of x86-64 or AArch64 assembly
// (the callee-saved registers and the stack pointer; ucontext's swapcontext makes a system call a
// switch, far too slow for a barrier per shuffle); elsewhere they fall back to ucontext. One
// scheduler runs the fibers of a block round robin, each until it waits at a barrier or returns.
#include "tests/engine/cuda/cuda_emulator.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#if !defined(__x86_64__) && !defined(__aarch64__)
#define DS4_EMU_UCONTEXT 1
#include <ucontext.h>
#endif

namespace ds4::cuda::emu {
namespace {

constexpr size_t kStackBytes = 128 * 1024;

struct Gate {
  unsigned expected = 0, arrived = 0;
  uint64_t generation = 0;
};

struct Warp {
  Gate gate;
  uint64_t lanes[2][32] = {};  // double buffered: shuffle k uses lanes[k % 2]
};

struct Fiber {
  std::unique_ptr<char[]> stack;
#if !defined(DS4_EMU_UCONTEXT)
  void* sp = nullptr;
#else
  ucontext_t context;
#endif
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
#if !defined(DS4_EMU_UCONTEXT)
  void* scheduler_sp = nullptr;
#else
  ucontext_t scheduler;
#endif
};
State state;

// ds4_emu_switch(save, load): push the callee-saved registers, store the stack pointer in
// *save, load `load` as the stack pointer, pop the registers saved there, return into that stack.
#if defined(__x86_64__)
extern "C" void ds4_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .p2align 4
  .type ds4_emu_switch, %function
ds4_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size ds4_emu_switch, .-ds4_emu_switch
)");
#elif defined(__aarch64__)
extern "C" void ds4_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .p2align 2
  .type ds4_emu_switch, %function
ds4_emu_switch:
  hint #34
  sub sp, sp, #160
  stp x19, x20, [sp, #0]
  stp x21, x22, [sp, #16]
  stp x23, x24, [sp, #32]
  stp x25, x26, [sp, #48]
  stp x27, x28, [sp, #64]
  stp x29, x30, [sp, #80]
  stp d8, d9, [sp, #96]
  stp d10, d11, [sp, #112]
  stp d12, d13, [sp, #128]
  stp d14, d15, [sp, #144]
  mov x9, sp
  str x9, [x0]
  mov sp, x1
  ldp x19, x20, [sp, #0]
  ldp x21, x22, [sp, #16]
  ldp x23, x24, [sp, #32]
  ldp x25, x26, [sp, #48]
  ldp x27, x28, [sp, #64]
  ldp x29, x30, [sp, #80]
  ldp d8, d9, [sp, #96]
  ldp d10, d11, [sp, #112]
  ldp d12, d13, [sp, #128]
  ldp d14, d15, [sp, #144]
  add sp, sp, #160
  ret
  .size ds4_emu_switch, .-ds4_emu_switch
)");
#endif

void to_scheduler() {
#if !defined(DS4_EMU_UCONTEXT)
  ds4_emu_switch(&state.current->sp, state.scheduler_sp);
#else
  swapcontext(&state.current->context, &state.scheduler);
#endif
}

[[noreturn]] void fiber_main() {
  (*state.kernel)();
  state.current->done = true;
  to_scheduler();
  std::abort();  // a finished fiber is never resumed
}

void start_fiber(Fiber& f) {
  if (!f.stack) f.stack = std::make_unique<char[]>(kStackBytes);
#if defined(__x86_64__)
  // Six zero registers for the pops, then fiber_main as the return address of the `ret`; the
  // stack is then 8 mod 16, as at any function entry.
  auto top = reinterpret_cast<uintptr_t>(f.stack.get() + kStackBytes) & ~uintptr_t{15};
  auto* sp = reinterpret_cast<void**>(top) - 8;
  for (int i = 0; i < 6; i++) sp[i] = nullptr;
  sp[6] = reinterpret_cast<void*>(&fiber_main);
  sp[7] = nullptr;
  f.sp = sp;
#elif defined(__aarch64__)
  // 20 zero registers for the loads but x30 (the link register), fiber_main, where `ret` goes;
  // the stack is then the 16-aligned top.
  auto top = reinterpret_cast<uintptr_t>(f.stack.get() + kStackBytes) & ~uintptr_t{15};
  auto* sp = reinterpret_cast<void**>(top) - 20;
  for (int i = 0; i < 20; i++) sp[i] = nullptr;
  sp[11] = reinterpret_cast<void*>(&fiber_main);
  f.sp = sp;
#else
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = f.stack.get();
  f.context.uc_stack.ss_size = kStackBytes;
  f.context.uc_link = nullptr;
  makecontext(&f.context, &fiber_main, 0);
#endif
}

void resume(Fiber& f) {
  state.current = &f;
  threadIdx = {f.tid, 0, 0};
#if !defined(DS4_EMU_UCONTEXT)
  ds4_emu_switch(&state.scheduler_sp, f.sp);
#else
  swapcontext(&state.scheduler, &f.context);
#endif
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

}  // namespace ds4::cuda::emu
