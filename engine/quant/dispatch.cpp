// Run-time choice of CPU kernels. At first use the generic set and the target architecture's
// sets (arch/kernel_set.hpp) are resolved into one table per architecture, indexed by type, in
// which every kernel an architecture lacks is taken from its fallback -- so a lookup is an index,
// and what a set does not implement always runs the reference. best_isa() asks the CPU (cpuid on
// x86, getauxval(AT_HWCAP) on arm64) which sets it can run; DS4D_ISA overrides for tests.
#include <array>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/quant/arch/kernel_set.hpp"
#include "engine/quant/quant.hpp"

namespace ds4::quant {
namespace {
using namespace detail;

constexpr size_t kSlots = 40;  // GGML type ids 0..39
using Resolved = std::array<CpuKernels, kSlots>;

struct Dispatch {
  std::array<Resolved, kArchCount> table{};
  std::array<bool, kArchCount> supported{};

  Dispatch() {
    const auto fill = [](Resolved& into, const KernelSet& set) {
      for (const KernelRow& row : set.rows) {
        CpuKernels& k = into[static_cast<size_t>(row.type)];
        if (row.kernels.dot != nullptr) k.dot = row.kernels.dot;
        if (row.kernels.dot_exact != nullptr) k.dot_exact = row.kernels.dot_exact;
        if (row.kernels.dot_multi != nullptr) k.dot_multi = row.kernels.dot_multi;
        if (row.kernels.dot_multi_fast != nullptr) k.dot_multi_fast = row.kernels.dot_multi_fast;
        if (row.kernels.quantize_activation != nullptr) k.quantize_activation = row.kernels.quantize_activation;
      }
    };
    fill(table[0], generic_kernel_set());
    supported[0] = true;
    // Sets are listed parents first, so a set's fallback is resolved before the set itself.
    for (const KernelSet& set : arch_kernel_sets()) {
      const auto a = static_cast<size_t>(set.arch);
      table[a] = table[static_cast<size_t>(set.fallback)];
      fill(table[a], set);
      supported[a] = arch_cpu_supports(set.arch);
    }
  }
};

const Dispatch& dispatch() {
  static const Dispatch d;
  return d;
}

constexpr const char* kArchNames[kArchCount] = {"scalar", "avx2", "neon", "neon-dotprod"};

Isa detect_isa() {
  const Dispatch& d = dispatch();
  if (const char* env = std::getenv("DS4D_ISA"); env != nullptr && *env != '\0') {
    const std::string v(env);
    if (v == "scalar" || v == "generic") return Isa{Arch::Generic, Order::Fast};
    Arch want;
    if (v == "avx2") want = Arch::Avx2;
    else if (v == "neon") want = Arch::Neon;
    else if (v == "dotprod" || v == "neon-dotprod") want = Arch::NeonDotprod;
    else throw std::runtime_error("DS4D_ISA=" + v + ": unknown (use scalar, avx2, neon or dotprod)");
    if (!d.supported[static_cast<size_t>(want)])
      throw std::runtime_error("DS4D_ISA=" + v + ": this build or CPU cannot run " +
                               kArchNames[static_cast<size_t>(want)] + " kernels");
    return Isa{want, Order::Fast};
  }
  for (Arch a : {Arch::NeonDotprod, Arch::Neon, Arch::Avx2})
    if (d.supported[static_cast<size_t>(a)]) return Isa{a, Order::Fast};
  return Isa{Arch::Generic, Order::Fast};
}

}  // namespace

Isa best_isa() {
  static const Isa isa = detect_isa();
  return isa;
}

Isa exact_isa() { return Isa{best_isa().arch, Order::Exact}; }

const char* arch_name(Arch arch) { return kArchNames[static_cast<size_t>(arch) % kArchCount]; }

const char* isa_name(Isa isa) {
  static constexpr const char* kExact[kArchCount] = {"scalar", "avx2-exact", "neon-exact", "neon-dotprod-exact"};
  const size_t a = static_cast<size_t>(isa.arch) % kArchCount;
  return isa.order == Order::Exact && isa.arch != Arch::Generic ? kExact[a] : kArchNames[a];
}

bool arch_supported(Arch arch) {
  const auto a = static_cast<size_t>(arch);
  return a < kArchCount && dispatch().supported[a];
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out{Isa::Scalar};
  for (Arch a : {Arch::Avx2, Arch::Neon, Arch::NeonDotprod})
    if (arch_supported(a)) out.insert(out.end(), {Isa{a, Order::Fast}, Isa{a, Order::Exact}});
  return out;
}

const CpuKernels& cpu_kernels(Type t, Arch arch) {
  traits(t);  // validates the type
  if (!arch_supported(arch))
    throw std::invalid_argument(std::string("no ") + arch_name(arch) + " kernels on this machine (build or CPU)");
  return dispatch().table[static_cast<size_t>(arch)][static_cast<size_t>(t)];
}

DotFn dot_fn(const Traits& t, Isa isa) {
  const CpuKernels& k = cpu_kernels(t.type, isa.arch);
  return isa.order == Order::Exact ? k.dot_exact : k.dot;
}

DotMultiFn dot_multi_fn(const Traits& t, Isa isa) {
  const CpuKernels& k = cpu_kernels(t.type, isa.arch);
  return isa.order == Order::Exact ? k.dot_multi : k.dot_multi_fast;
}

float dot(Type w_type, const void* w, const void* act, int64_t n, Isa isa) {
  const Traits& t = traits(w_type);
  if (!t.has_dot) throw std::invalid_argument(std::string(type_info(w_type).name) + " has no weight dot product");
  if (n % t.block_elems != 0)
    throw std::invalid_argument("dot of " + std::to_string(n) + " elements: not a multiple of the " +
                                std::string(type_info(w_type).name) + " block size");
  return dot_fn(t, isa)(w, act, n);
}

void quantize_activation(Type vec_dot_type, const float* x, void* out, int64_t n, Isa isa) {
  act_row_bytes(vec_dot_type, n);  // validates type and length
  cpu_kernels(vec_dot_type, isa.arch).quantize_activation(x, out, n);
}

void quantize_activation(Type vec_dot_type, const float* x, void* out, int64_t n) {
  quantize_activation(vec_dot_type, x, out, n, best_isa());
}

}  // namespace ds4::quant
