// `ds4ctl verify-sidecar MAIN.gguf MTP.gguf`: exit 0 when the MTP sidecar was converted from the
// same source revision (and in the same conversion) as the main model, 1 with the reason
// otherwise (toolchain/convert/mtp_sidecar.hpp).
#include <fmt/core.h>

#include <memory>

#include "ds4ctl/command_registry.hpp"
#include "toolchain/convert/mtp_sidecar.hpp"

namespace {

struct Args {
  std::string main, sidecar;
};

ds4ctl::Register reg{"verify-sidecar", "Check that an MTP sidecar GGUF belongs to a main GGUF (same source revision)",
                     [](CLI::App& sub) -> ds4ctl::RunFn {
                       auto a = std::make_shared<Args>();
                       sub.add_option("MAIN", a->main, "main GGUF")->required()->check(CLI::ExistingFile);
                       sub.add_option("SIDECAR", a->sidecar, "MTP sidecar GGUF")->required()->check(CLI::ExistingFile);
                       return [a]() -> int {
                         try {
                           ds4::convert::verify_sidecar(a->main, a->sidecar);
                           fmt::print("{}: bound to {}\n", a->sidecar, a->main);
                           return 0;
                         } catch (const std::exception& e) {
                           fmt::print(stderr, "ds4ctl verify-sidecar: {}\n", e.what());
                           return 1;
                         }
                       };
                     }};

}  // namespace
