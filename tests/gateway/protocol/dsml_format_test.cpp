// Escaping helpers and the byte-exact JSON scanner behind canonical DSML.
#include "gateway/protocol/dsml_format.hpp"

#include <gtest/gtest.h>

#include "gateway/protocol/json_scan.hpp"

namespace ds4::protocol {
namespace {

TEST(DsmlFormat, EscapesOnlyWhatTheRulesSay) {
  EXPECT_EQ(dsml::escape_attribute("a\"b<c>d&e'f"), "a&quot;b&lt;c&gt;d&amp;e'f");
  EXPECT_EQ(dsml::escape_string_value("x && y > z </｜DSML｜parameter> </｜DSML｜invoke>"),
            "x && y > z &lt;/｜DSML｜parameter> </｜DSML｜invoke>");
  EXPECT_EQ(dsml::escape_json_value("\"</｜DSML｜parameter>\""), "\"\\u003c/｜DSML｜parameter>\"");
  EXPECT_EQ(dsml::escape_tool_result("<a>&</tool_result></tool_result"), "<a>&&lt;/tool_result></tool_result");
  EXPECT_EQ(dsml::unescape_entities("&amp;&lt;&gt;&quot;&apos;&nbsp;&"), "&<>\"'&nbsp;&");
}

TEST(DsmlFormat, MinifyKeepsStringBytes) {
  EXPECT_EQ(dsml::minify_json(" { \"a b\" : [ 1 , \"x \\\" y\" ] }\n"), "{\"a b\":[1,\"x \\\" y\"]}");
  EXPECT_EQ(dsml::minify_json("1.50e+3"), "1.50e+3");
}

TEST(JsonScan, ObjectMembersKeepRawValuesAndOrder) {
  auto m = json_scan::object_members(R"( {"b": 1.0, "a": "x\u00e9\ud83d\ude42", "b": [ 1 ], "n": null} )");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[0].key, "b");
  EXPECT_EQ((*m)[0].raw_value, "1.0");
  EXPECT_TRUE((*m)[1].is_string);
  EXPECT_EQ((*m)[1].string_value, "xé🙂");
  EXPECT_EQ((*m)[2].raw_value, "[ 1 ]");
  EXPECT_EQ((*m)[3].raw_value, "null");
  EXPECT_FALSE(json_scan::object_members("[1]"));
  EXPECT_FALSE(json_scan::object_members("{\"a\":1} x"));
  EXPECT_FALSE(json_scan::object_members("{\"a\":01}"));
  EXPECT_FALSE(json_scan::object_members("{\"a\" 1}"));
}

TEST(JsonScan, DepthIsLimited) {
  std::string deep(300, '[');
  deep += std::string(300, ']');
  EXPECT_FALSE(json_scan::is_valid(deep));
  std::string ok(200, '[');
  ok += std::string(200, ']');
  EXPECT_TRUE(json_scan::is_valid(ok));
}

TEST(DsmlFormat, ParameterValueSpans) {
  std::string block =
      "\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"a\" "
      "string=\"true\">VAL</｜DSML｜parameter>\n<｜DSML｜parameter name=\"b\" string=\"false\">7</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n</｜DSML｜tool_calls>";
  auto spans = dsml::parameter_value_spans(block);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(block.substr(spans[0].first, spans[0].second - spans[0].first), "VAL");
  EXPECT_EQ(block.substr(spans[1].first, spans[1].second - spans[1].first), "7");
}

}  // namespace
}  // namespace ds4::protocol
