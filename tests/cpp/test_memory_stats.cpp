#include "runtime/memory_stats.h"

#include <gtest/gtest.h>

namespace torch_tpu::runtime {
namespace {

TEST(Stat, TracksCurrentPeakAndTotals) {
  Stat stat;
  stat.increase(10);
  stat.increase(5);
  stat.decrease(12);
  EXPECT_EQ(stat.current, 3);
  EXPECT_EQ(stat.peak, 15);
  EXPECT_EQ(stat.allocated, 15);
  EXPECT_EQ(stat.freed, 12);
}

TEST(Stat, ResetPeakAndAccumulated) {
  Stat stat;
  stat.increase(8);
  stat.decrease(6);
  stat.reset_peak();
  EXPECT_EQ(stat.peak, 2);
  stat.reset_accumulated();
  EXPECT_EQ(stat.allocated, 0);
  EXPECT_EQ(stat.freed, 0);
  EXPECT_EQ(stat.current, 2);  // resets never touch the live value
}

}  // namespace
}  // namespace torch_tpu::runtime
