#include "runtime/host_load.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace torch_tpu::runtime {
namespace {

// --- /proc/stat ---------------------------------------------------------------------------------

TEST(ParseBusyJiffies, SumsUserNiceSystemIrqSoftirqSteal) {
  // user 100, nice 20, system 30, idle 5000, iowait 7, irq 1, softirq 2, steal 3, guests 40 0
  const char* text =
      "cpu  100 20 30 5000 7 1 2 3 40 0\n"
      "cpu0 50 10 15 2500 3 1 1 2 20 0\n"
      "intr 12345 0 0\n";
  EXPECT_EQ(parse_busy_jiffies(text), 100u + 20 + 30 + 1 + 2 + 3);
}

TEST(ParseBusyJiffies, AcceptsOlderKernelsWithFewerFields) {
  EXPECT_EQ(parse_busy_jiffies("cpu  100 20 30 5000\n"), 150u);
  EXPECT_EQ(parse_busy_jiffies("cpu  100 20 30 5000 7 1 2\n"), 153u);  // no steal column
}

TEST(ParseBusyJiffies, ReadsOnlyTheFirstLine) {
  EXPECT_EQ(parse_busy_jiffies("cpu  1 1 1 1\n99 99 99"), 3u);
}

TEST(ParseBusyJiffies, RejectsWhatIsNotTheAggregateLine) {
  EXPECT_EQ(parse_busy_jiffies(""), std::nullopt);
  EXPECT_EQ(parse_busy_jiffies("cpu0 1 2 3 4 5 6 7 8\n"), std::nullopt);  // one CPU, not all
  EXPECT_EQ(parse_busy_jiffies("intr 1 2 3 4\n"), std::nullopt);
  EXPECT_EQ(parse_busy_jiffies("cpu  1 2 3\n"), std::nullopt);  // too few fields
  EXPECT_EQ(parse_busy_jiffies("cpu  1 2 x 4 5\n"), std::nullopt);
  EXPECT_EQ(parse_busy_jiffies("cpu  1 2 -3 4 5\n"), std::nullopt);
}

TEST(OthersLoad, IsMachineBusyLessOwnTimePerWallSecond) {
  EXPECT_DOUBLE_EQ(others_load_cores(/*machine*/ 0.3, /*own*/ 0.2, /*wall*/ 0.1), 1.0);
  EXPECT_DOUBLE_EQ(others_load_cores(0.2, 0.2, 0.1), 0.0);
  // The clocks disagree a little on a quiet machine: never a negative load.
  EXPECT_DOUBLE_EQ(others_load_cores(0.19, 0.2, 0.1), 0.0);
  EXPECT_DOUBLE_EQ(others_load_cores(1.0, 0.0, 0.0), 0.0);  // empty window
}

TEST(HostLoadSampler, FirstCallBeginsAWindowAndLaterOnesWaitForItToElapse) {
  HostLoadSampler sampler;
  EXPECT_EQ(sampler.sample(), std::nullopt);  // begins the window
  EXPECT_EQ(sampler.sample(), std::nullopt);  // too soon
  std::this_thread::sleep_for(HostLoadSampler::kWindow + std::chrono::milliseconds(10));
  const std::optional<LoadWindow> window = sampler.sample();
  ASSERT_TRUE(window.has_value());  // Linux: /proc/stat is there
  EXPECT_GE(window->others_load, 0.0);
  EXPECT_GE(window->seconds, 0.1);
  EXPECT_EQ(sampler.sample(), std::nullopt);  // a new window began
}

// --- the governor -------------------------------------------------------------------------------

// A nominal 100-ms window with `load` cores of others.
LoadWindow w(double load, double seconds = 0.1) { return {load, seconds}; }

TEST(HostTeamGovernor, ShrinksAfterTwoCrowdedWindowsInARow) {
  HostTeamGovernor governor(/*cpus=*/2);
  EXPECT_EQ(governor.observe(w(0.6), 2), 2);
  EXPECT_EQ(governor.observe(w(0.1), 2), 2);  // the streak breaks
  EXPECT_EQ(governor.observe(w(0.5), 2), 2);
  EXPECT_FALSE(governor.reduced());
  EXPECT_EQ(governor.observe(w(0.7), 2), 1);
  EXPECT_TRUE(governor.reduced());
}

TEST(HostTeamGovernor, GrowsBackAfterThreeQuietWindowsInARow) {
  HostTeamGovernor governor(2);
  governor.observe(w(0.7), 2);
  ASSERT_EQ(governor.observe(w(0.7), 2), 1);
  // Between the thresholds, and the neighbour's own load once the team has shrunk: stays small.
  EXPECT_EQ(governor.observe(w(0.4), 2), 1);
  EXPECT_EQ(governor.observe(w(0.2), 2), 1);
  EXPECT_EQ(governor.observe(w(0.25), 2), 1);
  EXPECT_EQ(governor.observe(w(0.3), 2), 1);  // the streak breaks
  EXPECT_EQ(governor.observe(w(0.0), 2), 1);
  EXPECT_EQ(governor.observe(w(0.1), 2), 1);
  EXPECT_EQ(governor.observe(w(0.2), 2), 2);
  EXPECT_FALSE(governor.reduced());
  // And shrinking again takes two crowded windows again.
  EXPECT_EQ(governor.observe(w(0.7), 2), 2);
  EXPECT_EQ(governor.observe(w(0.7), 2), 1);
}

TEST(HostTeamGovernor, AWholeCoreTakenShrinksAtOnce) {
  HostTeamGovernor governor(2);
  EXPECT_EQ(governor.observe(w(0.95), 2), 1);
  EXPECT_TRUE(governor.reduced());
  // Only a whole window of it: a short one may be a blip.
  HostTeamGovernor short_window(2);
  EXPECT_EQ(short_window.observe(w(0.95, 0.05), 2), 2);
}

TEST(HostTeamGovernor, CountsTheTimeWindowsSpanNotHowManyThereWere) {
  // A host that syncs rarely samples long windows: one of 250 ms is two windows' worth.
  HostTeamGovernor governor(2);
  EXPECT_EQ(governor.observe(w(0.8, 0.25), 2), 1);
  EXPECT_EQ(governor.observe(w(0.0, 0.2), 2), 1);
  EXPECT_EQ(governor.observe(w(0.0, 0.1), 2), 2);  // 300 ms quiet in all
  // Windows a hair shorter than nominal (as measured) still add up.
  EXPECT_EQ(governor.observe(w(0.8, 0.1 - 1e-9), 2), 2);
  EXPECT_EQ(governor.observe(w(0.8, 0.1 - 1e-9), 2), 1);
}

TEST(HostTeamGovernor, NeverGoesAboveWhatTheUserAskedFor) {
  HostTeamGovernor governor(2);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(governor.observe(w(1.0), 1), 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(governor.observe(w(0.0), 1), 1);
  // The user lowers the count while the team is reduced: the smaller wins.
  HostTeamGovernor crowded(8);
  crowded.observe(w(3.0), 8);
  ASSERT_EQ(crowded.observe(w(3.0), 8), 5);
  EXPECT_EQ(crowded.observe(w(3.0), 4), 4);
  EXPECT_EQ(crowded.observe(w(3.0), 2), 2);
}

TEST(HostTeamGovernor, LoadOnCoresTheTeamLeavesFreeIsNotCrowding) {
  // A team of 4 on 16 CPUs: 12 cores' worth of others fit beside it.
  HostTeamGovernor governor(16);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(governor.observe(w(12.0), 4), 4);
  EXPECT_EQ(governor.observe(w(12.6), 4), 4);
  EXPECT_EQ(governor.observe(w(12.6), 4), 3);  // 0.6 cores crowd it: one thread less
}

TEST(HostTeamGovernor, ShrinksByOneThreadPerCrowdingCoreOnABigMachine) {
  // 16 threads on 16 CPUs with one neighbour: 15, not 1.
  HostTeamGovernor governor(16);
  governor.observe(w(1.0), 16);
  EXPECT_EQ(governor.observe(w(1.0), 16), 15);
  HostTeamGovernor busier(16);
  busier.observe(w(2.3), 16);
  EXPECT_EQ(busier.observe(w(2.3), 16), 13);  // rounded up
  HostTeamGovernor swamped(16);
  swamped.observe(w(40.0), 16);
  EXPECT_EQ(swamped.observe(w(40.0), 16), 1);  // at least one thread
}

}  // namespace
}  // namespace torch_tpu::runtime
