// Canonical DSML rendering and the escaping rules shared by the renderer and the output parser.
// The bytes produced here must match ds4's append_dsml_tool_calls_text exactly, because they
// become the model's context (and, for replays without a stored block, its KV-cache key).
#include "gateway/protocol/dsml_format.hpp"

#include "gateway/protocol/json_scan.hpp"

namespace ds4::protocol::dsml {

namespace {

// Appends `text`, writing `replacement` instead of the first byte of every occurrence of `tag`.
std::string replace_tag_lead(std::string_view text, std::string_view tag, std::string_view replacement) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (;;) {
    size_t hit = text.find(tag, pos);
    if (hit == std::string_view::npos) {
      out.append(text.substr(pos));
      return out;
    }
    out.append(text.substr(pos, hit - pos));
    out.append(replacement);
    pos = hit + 1;
  }
}

}  // namespace

const StyleTags& tags(Style style) {
  static const StyleTags full{"<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>", "<｜DSML｜invoke",
                              "</｜DSML｜invoke>",    "<｜DSML｜parameter",    "</｜DSML｜parameter>"};
  static const StyleTags shortened{"<DSML｜tool_calls>", "</DSML｜tool_calls>", "<DSML｜invoke",
                                   "</DSML｜invoke>",    "<DSML｜parameter",    "</DSML｜parameter>"};
  static const StyleTags plain{"<tool_calls>", "</tool_calls>", "<invoke", "</invoke>", "<parameter", "</parameter>"};
  switch (style) {
    case Style::Full: return full;
    case Style::Short: return shortened;
    case Style::Plain: return plain;
  }
  return full;
}

std::string escape_attribute(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string escape_string_value(std::string_view text) { return replace_tag_lead(text, kParameterClose, "&lt;"); }

std::string escape_json_value(std::string_view json) { return replace_tag_lead(json, kParameterClose, "\\u003c"); }

std::string escape_tool_result(std::string_view text) { return replace_tag_lead(text, kToolResultClose, "&lt;"); }

std::string unescape_entities(std::string_view text) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '&') {
      bool matched = false;
      for (const auto& [entity, ch] : kEntities) {
        if (text.substr(i, entity.size()) == entity) {
          out.push_back(ch);
          i += entity.size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    out.push_back(text[i++]);
  }
  return out;
}

std::string minify_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  bool escape = false;
  for (char c : json) {
    if (in_string) {
      out.push_back(c);
      if (escape) escape = false;
      else if (c == '\\') escape = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
      out.push_back(c);
    } else if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')) {
      out.push_back(c);
    }
  }
  return out;
}

void render_tool_calls(const std::vector<ToolCall>& calls, std::string& out,
                       std::vector<std::pair<size_t, size_t>>* value_spans,
                       std::vector<std::pair<size_t, size_t>>* name_spans) {
  if (calls.empty()) return;
  auto spanned = [&](const std::string& text, std::vector<std::pair<size_t, size_t>>* spans) {
    size_t begin = out.size();
    out += text;
    if (spans && out.size() > begin) spans->emplace_back(begin, out.size());
  };
  auto value = [&](const std::string& text) { spanned(text, value_spans); };
  auto name = [&](const std::string& text) { spanned(text, name_spans); };
  out += "\n\n<｜DSML｜tool_calls>\n";
  for (const ToolCall& call : calls) {
    out += "<｜DSML｜invoke name=\"";
    name(escape_attribute(call.name));
    out += "\">\n";
    if (auto members = json_scan::object_members(call.arguments)) {
      for (const auto& m : *members) {
        out += "<｜DSML｜parameter name=\"";
        name(escape_attribute(m.key));
        out += m.is_string ? "\" string=\"true\">" : "\" string=\"false\">";
        value(m.is_string ? escape_string_value(m.string_value) : escape_json_value(minify_json(m.raw_value)));
        out += kParameterClose;
        out += "\n";
      }
    } else {
      out += "<｜DSML｜parameter name=\"arguments\" string=\"true\">";
      value(escape_string_value(call.arguments));
      out += kParameterClose;
      out += "\n";
    }
    out += "</｜DSML｜invoke>\n";
  }
  out += kToolCallsClose;
}

std::vector<std::pair<size_t, size_t>> parameter_value_spans(std::string_view block) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (Style style : {Style::Full, Style::Short, Style::Plain}) {
    const StyleTags& t = tags(style);
    size_t pos = 0;
    while ((pos = block.find(t.param_open, pos)) != std::string_view::npos) {
      size_t gt = block.find('>', pos);
      if (gt == std::string_view::npos) break;
      size_t close = block.find(t.param_close, gt + 1);
      if (close == std::string_view::npos) break;
      // A nested (loose) parameter: its children are found on their own.
      size_t nested = block.find(t.param_open, gt + 1);
      if (nested != std::string_view::npos && nested < close) {
        pos = gt + 1;
        continue;
      }
      if (close > gt + 1) spans.emplace_back(gt + 1, close);
      pos = close + t.param_close.size();
    }
    if (!spans.empty()) break;  // one style per block
  }
  return spans;
}

}  // namespace ds4::protocol::dsml
