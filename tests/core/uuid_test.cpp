#include "core/uuid.hpp"

#include <gtest/gtest.h>

#include <set>

namespace mpo {
namespace {

TEST(Uuid7, HasVersion7VariantAndTimestamp) {
  Uuid7Generator gen(1);
  const std::string id = gen.next(0x0192'3456'789aLL);
  EXPECT_TRUE(is_uuid_v7(id)) << id;
  EXPECT_EQ(id.substr(0, 13), "01923456-789a");
}

TEST(Uuid7, SortsInCreationOrderWithinOneMillisecond) {
  Uuid7Generator gen(7);
  std::string prev = gen.next(1000);
  std::set<std::string> seen{prev};
  for (int i = 0; i < 5000; ++i) {
    std::string next = gen.next(1000);
    EXPECT_LT(prev, next);
    EXPECT_TRUE(seen.insert(next).second);
    prev = next;
  }
}

TEST(Uuid7, ValidatorRejectsOtherForms) {
  EXPECT_FALSE(is_uuid_v7("01923456-789a-4abc-8def-0123456789ab"));  // version 4
  EXPECT_FALSE(is_uuid_v7("01923456-789a-7abc-cdef-0123456789ab"));  // wrong variant
  EXPECT_FALSE(is_uuid_v7("01923456789a7abc8def0123456789ab"));
  EXPECT_FALSE(is_uuid_v7("01923456-789A-7abc-8def-0123456789ab"));  // uppercase
}

}  // namespace
}  // namespace mpo
