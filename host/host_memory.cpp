// Parsers for /proc/meminfo and PSI files; see host_memory.hpp.
#include "host/host_memory.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ds4::host {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

MemInfo parse_meminfo(std::string_view text, const std::string& source) {
  MemInfo m;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos)
      throw std::runtime_error(source + ":" + std::to_string(n) + ": no ':' in '" + line + "'");
    std::istringstream fields(line.substr(colon + 1));
    uint64_t value = 0;
    std::string unit;
    if (!(fields >> value))
      throw std::runtime_error(source + ":" + std::to_string(n) + ": no number in '" + line + "'");
    fields >> unit;
    if (unit == "kB") value *= 1024;
    else if (!unit.empty())
      throw std::runtime_error(source + ":" + std::to_string(n) + ": unknown unit '" + unit + "'");
    m.fields[line.substr(0, colon)] = value;
  }
  auto need = [&](const char* key) {
    auto it = m.fields.find(key);
    if (it == m.fields.end()) throw std::runtime_error(source + ": no " + key + " line");
    return it->second;
  };
  m.mem_total = need("MemTotal");
  m.mem_available = need("MemAvailable");
  auto opt = [&](const char* key) {
    auto it = m.fields.find(key);
    return it == m.fields.end() ? 0 : it->second;
  };
  m.swap_total = opt("SwapTotal");
  m.swap_free = opt("SwapFree");
  return m;
}

MemInfo read_meminfo(const std::string& path) { return parse_meminfo(slurp(path), path); }

Psi parse_psi(std::string_view text, const std::string& source) {
  Psi p;
  bool has_some = false;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string kind, tok;
    words >> kind;
    PsiLine l;
    int seen = 0;
    while (words >> tok) {
      const size_t eq = tok.find('=');
      if (eq == std::string::npos) throw std::runtime_error(source + ": malformed PSI field '" + tok + "'");
      const std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
      try {
        if (k == "avg10") l.avg10 = std::stod(v), ++seen;
        else if (k == "avg60") l.avg60 = std::stod(v), ++seen;
        else if (k == "avg300") l.avg300 = std::stod(v), ++seen;
        else if (k == "total") l.total_us = std::stoull(v), ++seen;
      } catch (const std::logic_error&) {
        throw std::runtime_error(source + ": bad number in PSI field '" + tok + "'");
      }
    }
    if (seen != 4) throw std::runtime_error(source + ": incomplete PSI line '" + line + "'");
    if (kind == "some") p.some = l, has_some = true;
    else if (kind == "full") p.full = l, p.has_full = true;
    else throw std::runtime_error(source + ": unknown PSI line kind '" + kind + "'");
  }
  if (!has_some) throw std::runtime_error(source + ": no 'some' line");
  return p;
}

Psi read_psi(const std::string& path) { return parse_psi(slurp(path), path); }

}  // namespace ds4::host
