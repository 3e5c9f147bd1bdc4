// Go encoding/json compatibility: the bytes fak's digests are taken over.
#include "core/go_json.hpp"

#include <gtest/gtest.h>

namespace mpo {
namespace {

std::string go_float(double v) {
  std::string s;
  append_go_float(s, v);
  return s;
}

std::string go_string(std::string_view v) {
  std::string s;
  append_go_string(s, v);
  return s;
}

TEST(GoJson, FloatsUseGosShortestForms) {
  EXPECT_EQ(go_float(16), "16");
  EXPECT_EQ(go_float(0.1), "0.1");
  EXPECT_EQ(go_float(123.457), "123.457");
  EXPECT_EQ(go_float(1e20), "100000000000000000000");
  EXPECT_EQ(go_float(1e21), "1e+21");
  EXPECT_EQ(go_float(1e100), "1e+100");
  EXPECT_EQ(go_float(0.000001), "0.000001");
  EXPECT_EQ(go_float(1e-7), "1e-7");  // encoding/json turns strconv's e-07 into e-7
  EXPECT_EQ(go_float(1.5e-10), "1.5e-10");
  EXPECT_EQ(go_float(-2.5), "-2.5");
}

TEST(GoJson, StringsEscapeHtmlAndLineSeparators) {
  EXPECT_EQ(go_string("<missing>"), R"("\u003cmissing\u003e")");
  EXPECT_EQ(go_string("a&b"), R"("a\u0026b")");
  EXPECT_EQ(go_string("q\"\\\n\t\x01"), R"("q\"\\\n\t\u0001")");
  EXPECT_EQ(go_string("\xe2\x80\xa8|\xe2\x80\xa9"), R"("\u2028|\u2029")");
  EXPECT_EQ(go_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(go_string("bad\xff"), R"("bad\ufffd")");
}

TEST(GoJson, MarshalAndIndentKeepInsertionOrder) {
  boost::json::object o;
  o["z"] = 1;
  o["a"] = boost::json::array{1.5, "x"};
  o["e"] = boost::json::object{};
  o["n"] = nullptr;
  EXPECT_EQ(go_marshal(o), R"({"z":1,"a":[1.5,"x"],"e":{},"n":null})");
  EXPECT_EQ(go_marshal_indent(o),
            "{\n  \"z\": 1,\n  \"a\": [\n    1.5,\n    \"x\"\n  ],\n  \"e\": {},\n  \"n\": null\n}\n");
}

TEST(GoJson, ExactParseKeepsEveryDoubleBitForBit) {
  const std::string text = R"({"a":123.457,"b":0.1,"c":[5e-324,1.7976931348623157e308],"d":12345678901234567})";
  auto v = parse_exact_json(text);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->at("a").as_double(), 123.457);
  EXPECT_EQ(v->at("c").as_array()[0].as_double(), 5e-324);
  EXPECT_EQ(go_marshal(*v), R"({"a":123.457,"b":0.1,"c":[5e-324,1.7976931348623157e+308],"d":12345678901234567})");
  EXPECT_FALSE(parse_exact_json("{} trailing").ok());
  EXPECT_FALSE(parse_exact_json("{").ok());
}

TEST(GoJson, Sha256DigestsAreStandard) {
  EXPECT_EQ(sha256_digest("abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(is_sha256_digest(sha256_digest("")));
  EXPECT_FALSE(is_sha256_digest("rcpt_c3b5dc1b4e0f"));
  EXPECT_FALSE(is_sha256_digest("sha256:abc"));
}

}  // namespace
}  // namespace mpo
