#pragma once
// A comma-separated list of counts on the command line (--contexts 0,512,4096; --sessions
// 1,2,4,8). Returns the values in order; throws CLI::ValidationError naming the option and the
// item that is not a whole number in [min, max].
#include <cstdint>
#include <string>
#include <vector>

namespace ds4ctl {

std::vector<uint32_t> parse_count_list(const std::string& option, const std::string& list, uint32_t min, uint32_t max,
                                       const std::string& what);

}  // namespace ds4ctl
