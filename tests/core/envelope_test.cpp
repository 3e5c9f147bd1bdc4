// Contract 3's envelope (core/envelope.hpp): both writers give the same document head, and a
// receipt's validity is read the one way every reader uses.
#include "core/envelope.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace mpo {
namespace {

TEST(Envelope, BothWritersOpenAReceiptTheSameWay) {
  JsonObjectWriter w;
  put_envelope_head(w, "modelperfobs.x.v1", 1767225600000000, "1.2.3");
  w.raw_field("validity", validity_json({false, {"torn last line skipped"}, {}}));
  const std::string written = std::move(w).finish();
  EXPECT_EQ(written, R"({"schema":"modelperfobs.x.v1","created_at":"2026-01-01T00:00:00.000000Z",)"
                     R"("tool":{"name":"modelperfobs","version":"1.2.3"},)"
                     R"("validity":{"valid":false,"reasons":["torn last line skipped"]}})");
  boost::json::object o;
  put_envelope_head(o, "modelperfobs.x.v1", 1767225600000000, "1.2.3");
  o["validity"] = validity_object({false, {"torn last line skipped"}, {}});
  EXPECT_EQ(boost::json::parse(written).as_object(), o);
}

TEST(Envelope, WarningsAreWrittenOnlyWhereTheFormatHasThem) {
  const Validity v{true, {}, {"token counts are estimated"}};
  EXPECT_EQ(validity_json(v), R"({"valid":true,"reasons":[]})");
  EXPECT_EQ(validity_json(v, true), R"({"valid":true,"reasons":[],"warnings":["token counts are estimated"]})");
  EXPECT_EQ(validity_object(v, true).at("warnings").as_array().size(), 1u);
}

TEST(Envelope, AReceiptWithoutAReadableValidityIsNotValid) {
  EXPECT_FALSE(read_validity(boost::json::parse(R"({"schema":"s"})").as_object()).valid);
  EXPECT_FALSE(read_validity(boost::json::parse(R"({"validity":{"valid":"yes"}})").as_object()).valid);
  const auto v = read_validity(
      boost::json::parse(R"({"validity":{"valid":true,"reasons":["a",2,"b"],"warnings":["w"]}})").as_object());
  EXPECT_TRUE(v.valid);
  EXPECT_EQ(v.reasons, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(v.warnings, (std::vector<std::string>{"w"}));
}

}  // namespace
}  // namespace mpo
