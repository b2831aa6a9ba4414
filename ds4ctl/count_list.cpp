// parse_count_list: see count_list.hpp.
#include "ds4ctl/count_list.hpp"

#include <CLI/CLI.hpp>
#include <stdexcept>

namespace ds4ctl {

std::vector<uint32_t> parse_count_list(const std::string& option, const std::string& list, uint32_t min, uint32_t max,
                                       const std::string& what) {
  std::vector<uint32_t> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(pos, comma - pos);
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < min || v > max)
      throw CLI::ValidationError(option, "\"" + item + "\" is not " + what);
    out.push_back(static_cast<uint32_t>(v));
    pos = comma + 1;
  }
  return out;
}

}  // namespace ds4ctl
