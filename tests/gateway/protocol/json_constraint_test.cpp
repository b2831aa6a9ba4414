// JsonConstraint (protocol/json_constraint.hpp): which JSON texts a schema lets through, byte by
// byte, for each feature the agents' tool schemas use.
#include "gateway/protocol/json_constraint.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace ds4::protocol {
namespace {

namespace json = boost::json;

JsonConstraint make(const char* schema) {
  return JsonConstraint(std::make_shared<const json::value>(json::parse(schema)));
}

// The whole text is taken and forms a complete value.
bool accepts(const char* schema, std::string_view text) {
  JsonConstraint c = make(schema);
  for (char ch : text)
    if (!c.step(ch)) return false;
  return c.complete();
}

TEST(JsonConstraint, AnyValueIsJson) {
  JsonConstraint any;
  EXPECT_TRUE(any.admits(R"({"a":[1,-2.5e3,true,null,"x\u00e9\n"]})"));
  EXPECT_FALSE(any.admits("{a:1}"));
  EXPECT_FALSE(any.admits("[1,]"));
  EXPECT_FALSE(any.admits("\"a\\q\""));
  EXPECT_FALSE(any.admits("01"));
  EXPECT_FALSE(any.admits("\"line\nbreak\""));  // a raw control character
}

TEST(JsonConstraint, TypesAndIntegers) {
  EXPECT_TRUE(accepts(R"({"type":"integer"})", "-42"));
  EXPECT_FALSE(accepts(R"({"type":"integer"})", "4.2"));
  EXPECT_FALSE(accepts(R"({"type":"integer"})", "\"4\""));
  EXPECT_TRUE(accepts(R"({"type":"number"})", "4.25e-1"));
  EXPECT_TRUE(accepts(R"({"type":"boolean"})", "false"));
  EXPECT_FALSE(accepts(R"({"type":"boolean"})", "\"false\""));
  EXPECT_TRUE(accepts(R"({"type":["string","null"]})", "null"));
  EXPECT_FALSE(accepts(R"({"type":["string","null"]})", "1"));
}

TEST(JsonConstraint, ObjectsRequiredAndClosed) {
  const char* s = R"({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},
                      "required":["path"],"additionalProperties":false})";
  EXPECT_TRUE(accepts(s, R"({"path":"/a","limit":3})"));
  EXPECT_TRUE(accepts(s, R"({ "limit" : 3 , "path" : "/a" })"));
  EXPECT_FALSE(accepts(s, R"({"limit":3})"));                // '}' refused: path missing
  EXPECT_FALSE(accepts(s, R"({"path":"/a","other":1})"));    // not a declared property
  EXPECT_FALSE(accepts(s, R"({"path":"/a","path":"/b"})"));  // duplicate
  EXPECT_FALSE(accepts(s, R"({"path":"/a","limit":"3"})"));  // wrong type
  JsonConstraint c = make(s);
  EXPECT_TRUE(c.admits(R"({"path":"/a")"));
  EXPECT_TRUE(c.admits(R"({"path":"/a"})"));
  // Once every declared key is given, no ',' can follow.
  EXPECT_FALSE(make(s).admits(R"({"path":"/a","limit":3,)"));
}

TEST(JsonConstraint, OpenObjectsTakeOtherKeysWithTheirSchema) {
  const char* s =
      R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}})";
  EXPECT_TRUE(accepts(s, R"({"a":1,"b":true})"));
  EXPECT_FALSE(accepts(s, R"({"a":1,"b":2})"));
}

TEST(JsonConstraint, ArraysOfStringsAndObjects) {
  EXPECT_TRUE(accepts(R"({"type":"array","items":{"type":"string"}})", R"(["a", "b"])"));
  EXPECT_FALSE(accepts(R"({"type":"array","items":{"type":"string"}})", R"(["a",2])"));
  const char* todos = R"({"type":"array","minItems":1,"maxItems":2,"items":{"type":"object",
      "properties":{"content":{"type":"string"},"status":{"enum":["pending","done"]}},
      "required":["content","status"],"additionalProperties":false}})";
  EXPECT_TRUE(accepts(todos, R"([{"content":"x","status":"done"}])"));
  EXPECT_FALSE(accepts(todos, "[]"));
  EXPECT_FALSE(accepts(todos, R"([{"content":"x","status":"later"}])"));
  EXPECT_FALSE(accepts(todos, R"([{"content":"x","status":"done"},{"content":"y","status":"done"},)"));
}

TEST(JsonConstraint, EnumConstAndLengths) {
  EXPECT_TRUE(accepts(R"({"enum":["low","high",3]})", "\"high\""));
  EXPECT_TRUE(accepts(R"({"enum":["low","high",3]})", "3"));
  EXPECT_FALSE(accepts(R"({"enum":["low","high",3]})", "\"hi\""));
  EXPECT_TRUE(accepts(R"({"const":"x"})", "\"x\""));
  EXPECT_FALSE(accepts(R"({"type":"string","maxLength":2})", "\"abc\""));
  EXPECT_TRUE(accepts(R"({"type":"string","maxLength":2})", "\"é\\n\""));
  EXPECT_FALSE(accepts(R"({"type":"string","minLength":2})", "\"a\""));
}

TEST(JsonConstraint, AnyOfTakesTheAlternativeTheFirstByteFits) {
  const char* s = R"({"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"string"}}]})";
  EXPECT_TRUE(accepts(s, "12"));
  EXPECT_TRUE(accepts(s, R"(["a"])"));
  EXPECT_FALSE(accepts(s, "\"a\""));
}

TEST(JsonConstraint, CompleteAndFinished) {
  JsonConstraint n = make(R"({"type":"integer"})");
  EXPECT_TRUE(n.step('7'));
  EXPECT_TRUE(n.complete());
  EXPECT_FALSE(n.finished());  // more digits may follow
  JsonConstraint o = JsonConstraint::any_object();
  EXPECT_FALSE(o.admits("[1]"));
  for (char ch : std::string_view("{}")) ASSERT_TRUE(o.step(ch));
  EXPECT_TRUE(o.finished());
  EXPECT_FALSE(o.step(' '));  // nothing follows a finished value
}

TEST(JsonConstraint, WhitespaceIsBounded) {
  JsonConstraint c;
  EXPECT_TRUE(c.admits(std::string(JsonConstraint::kMaxWhitespace, ' ') + "1"));
  EXPECT_FALSE(c.admits(std::string(JsonConstraint::kMaxWhitespace + 1, ' ')));
}

TEST(JsonConstraint, StringsAreValidUtf8) {
  JsonConstraint any;
  EXPECT_TRUE(any.admits("\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\""));
  EXPECT_FALSE(any.admits("\"\xFD"));          // never a UTF-8 byte
  EXPECT_FALSE(any.admits("\"\xC3\""));        // a character cut short
  EXPECT_FALSE(any.admits("\"\xE0\x80\x80"));  // overlong
  EXPECT_FALSE(any.admits("\"\xED\xA0\x80"));  // a surrogate
  EXPECT_FALSE(any.admits("{\"\x80"));         // in a key too
}

TEST(JsonConstraint, RefusedByteChangesNothing) {
  JsonConstraint c = make(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  for (char ch : std::string_view("{\"a\":1")) ASSERT_TRUE(c.step(ch));
  EXPECT_FALSE(c.step('x'));
  EXPECT_TRUE(c.step('}'));
  EXPECT_TRUE(c.finished());
}

}  // namespace
}  // namespace ds4::protocol
