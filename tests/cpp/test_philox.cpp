#include "privateuse1/philox.h"

#include <gtest/gtest.h>

namespace torch_tpu::privateuse1 {
namespace {

// Known answers of Philox4x32-10 (the published test vectors of the Random123 library).
TEST(Philox, MatchesTheKnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, 0),
            (PhiloxBlock{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 0xffffffffffffffffull),
            (PhiloxBlock{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0x299f31d0a4093822ull),
            (PhiloxBlock{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, NeighbouringCountersAndKeysGiveUnrelatedOutputs) {
  const PhiloxBlock base = philox4x32_10({7, 0, 0, 0}, 42);
  EXPECT_NE(base, philox4x32_10({8, 0, 0, 0}, 42));
  EXPECT_NE(base, philox4x32_10({7, 0, 0, 0}, 43));
  EXPECT_EQ(base, philox4x32_10({7, 0, 0, 0}, 42));
}

}  // namespace
}  // namespace torch_tpu::privateuse1
