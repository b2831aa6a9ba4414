// Defaults → TOML file → DS4D_* environment → flags; see config_loader.hpp.
#include "config/config_loader.hpp"

#include <toml++/toml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string_view>

namespace ds4::config {
namespace {

// `wanted` both: every key (the supervisor takes all flags, forwarding the daemon's to ds4d).
bool in_scope(KeyScope key, KeyScope wanted) {
  return wanted == KeyScope::Both || key == KeyScope::Both || key == wanted;
}

std::string toml_scalar_text(const toml::node& n) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto f = n.as_floating_point()) {
    std::ostringstream o;
    o.precision(17);
    o << f->get();
    return o.str();
  }
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  throw std::invalid_argument("expected a string, number or boolean, not a table or array");
}

std::string where(const std::string& file, const toml::source_region& r) {
  return file + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

// "..." with TOML basic-string escapes (double quotes, so that simple tools can strip them).
std::string toml_basic_string(const std::string& v) {
  std::string out = "\"";
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

ConfigLoader::ConfigLoader(CLI::App& app, KeyScope scope) : scope_(scope) {
  storage_.emplace_back();
  config_option_ =
      app.add_option("--config", storage_.back(),
                     std::string("configuration file (default ") + kDefaultConfigFile + "; env DS4D_CONFIG)");
  config_option_->group("Configuration");
  for (const ConfigKey& k : config_keys()) {
    if (!in_scope(k.scope, scope)) continue;
    storage_.emplace_back();
    std::string names = k.flag;
    if (!k.alias.empty()) names += "," + k.alias;
    std::string section = k.path.substr(0, k.path.find('.'));
    section[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(section[0])));
    const std::string def = k.get(Config{});
    CLI::Option* o = app.add_option(names, storage_.back(),
                                    k.help + " [" + k.path + ", " + k.env + ", default " +
                                        (def.empty() ? std::string("unset") : "'" + def + "'") + "]");
    o->type_name(k.type);
    if (k.repeatable) o->delimiter(',')->multi_option_policy(CLI::MultiOptionPolicy::Join);
    o->group(section + " options");
    bound_.push_back({&k, o, &storage_.back()});
  }
}

void ConfigLoader::apply_file(Config& c, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw ConfigError(where(path, e.source()) + ": " + std::string(e.description()));
  }
  for (auto&& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    const toml::table* t = section_node.as_table();
    if (t == nullptr) throw ConfigError(where(path, section_node.source()) + ": '" + section + "' must be a [section]");
    for (auto&& [key, node] : *t) {
      const std::string full = section + "." + std::string(key.str());
      const ConfigKey* k = find_config_key(full);
      if (k == nullptr) throw ConfigError(where(path, node.source()) + ": unknown key " + full);
      try {
        k->set(c, toml_scalar_text(node));
      } catch (const std::exception& e) {
        throw ConfigError(where(path, node.source()) + ": " + full + ": " + e.what());
      }
      origins_[full] = "file " + path;
    }
  }
}

Config ConfigLoader::load(const EnvLookup& env_in) {
  const EnvLookup env = env_in ? env_in : EnvLookup([](const char* n) -> const char* { return std::getenv(n); });
  Config c;
  origins_.clear();
  for (const ConfigKey& k : config_keys()) origins_[k.path] = "default";

  bool explicit_file = false;
  std::string file = kDefaultConfigFile;
  if (config_option_->count() > 0) {
    file = storage_.front();
    explicit_file = true;
  } else if (const char* e = env("DS4D_CONFIG")) {
    file = e;
    explicit_file = true;
  }
  config_file_.clear();
  if (!file.empty()) {
    if (std::filesystem::exists(file)) {
      apply_file(c, file);
      config_file_ = file;
    } else if (explicit_file) {
      throw ConfigError(file + ": configuration file does not exist");
    }
  }
  for (const ConfigKey& k : config_keys()) {
    const char* v = env(k.env.c_str());
    if (v == nullptr) continue;
    try {
      k.set(c, v);
    } catch (const std::exception& e) {
      throw ConfigError(k.env + ": " + e.what());
    }
    origins_[k.path] = "env " + k.env;
  }
  for (const Bound& b : bound_) {
    if (b.option->count() == 0) continue;
    try {
      b.key->set(c, *b.value);
    } catch (const std::exception& e) {
      throw ConfigError(b.key->flag + ": " + e.what());
    }
    origins_[b.key->path] = "flag " + b.key->flag;
  }
  return c;
}

std::vector<std::string> ConfigLoader::given_flags(KeyScope scope) const {
  std::vector<std::string> out;
  for (const Bound& b : bound_)
    if (b.option->count() > 0 && (b.key->scope == KeyScope::Both || b.key->scope == scope))
      out.push_back(b.key->flag + "=" + *b.value);
  return out;
}

std::string render_config(const Config& c, const std::map<std::string, std::string>& origins) {
  // Dotted keys ("server.port = 8080") are valid TOML and one line per key is easy to grep.
  std::string out;
  for (const ConfigKey& k : config_keys()) {
    const std::string v = k.get(c);
    auto it = origins.find(k.path);
    const std::string origin = it == origins.end() ? "default" : it->second;
    const bool text = k.type == "path" || k.type == "address" || k.type == "user" || k.type == "level" ||
                      k.type == "name" || k.type == "list" || k.type.find('|') != std::string::npos;
    if (v.empty() && !text) {
      out += "# " + k.path + " = (unset)  # " + origin + "\n";
      continue;
    }
    out += k.path + " = " + (text ? toml_basic_string(v) : v) + "  # " + origin + "\n";
  }
  return out;
}

std::vector<std::string> unknown_environment(const char* const* envp) {
  std::vector<std::string> out;
  if (envp == nullptr) return out;
  for (; *envp != nullptr; ++envp) {
    std::string_view entry(*envp);
    if (!entry.starts_with("DS4D_")) continue;
    std::string name(entry.substr(0, entry.find('=')));
    if (name == "DS4D_CONFIG" || name == "DS4D_ISA") continue;
    bool known = false;
    for (const ConfigKey& k : config_keys()) known = known || k.env == name;
    if (!known) out.push_back(std::move(name));
  }
  return out;
}

}  // namespace ds4::config
