// How busy other processes keep this machine, and what that means for the size of the host
// thread's OpenMP team. On a machine with few cores a neighbour process that holds one of them
// makes a full team's helper threads spin-wait for a core that is not there (the co-tenant
// issue, docs/performance.md), so the team shrinks while others crowd its cores.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

namespace torch_tpu::runtime {

// Busy jiffies of all CPUs (user + nice + system + irq + softirq + steal) from the aggregate
// "cpu " line that starts `proc_stat` (/proc/stat's text); nullopt when that line is missing
// or malformed. Pure: tests feed it strings.
std::optional<uint64_t> parse_busy_jiffies(std::string_view proc_stat);

// Other processes' load in cores over a window: (machine busy - own CPU) / wall, never below
// 0 (the two clocks count differently, so a quiet machine can read slightly negative); 0 for an
// empty window.
double others_load_cores(double machine_busy_seconds, double own_cpu_seconds, double wall_seconds);

// Other processes' load over one sampling window.
struct LoadWindow {
  double others_load = 0;  // cores
  double seconds = 0;      // the window's length
};

// Samples others' load over windows of at least kWindow. Not thread-safe: one thread calls it.
class HostLoadSampler {
 public:
  static constexpr std::chrono::milliseconds kWindow{100};

  // Others' load over the window that ends now, once kWindow has passed since it began (the
  // first call only begins one); else nullopt after reading only the steady clock. Also
  // nullopt when /proc/stat cannot be read (then sampling stops for good).
  std::optional<LoadWindow> sample();

 private:
  struct Reading {
    std::chrono::steady_clock::time_point time;
    double machine_busy_seconds = 0;
    double own_cpu_seconds = 0;
  };
  // Now, from /proc/stat and this process's CPU clock; nullopt if either cannot be read.
  static std::optional<Reading> read_now();

  std::optional<Reading> window_start_;
  bool unavailable_ = false;
};

// Decides the host team's size from others' load, window by window, with hysteresis so that
// a short busy or quiet spell does not resize it. Pure: tests feed it windows.
class HostTeamGovernor {
 public:
  // Crowding is others' load beyond the cores the full team leaves free. The team shrinks once
  // windows in a row spanning kShrinkAfter were crowded by at least kShrinkLoad cores (two
  // 100-ms windows), and grows back to full once windows spanning kGrowAfter were crowded by at
  // most kGrowLoad (three). Time, not a count of windows: a host that syncs rarely (and a
  // crowded team makes every step slow) samples long windows, and must not react later for it.
  static constexpr double kShrinkLoad = 0.5;
  static constexpr double kGrowLoad = 0.25;
  static constexpr double kShrinkAfterSeconds = 0.2;
  // A window crowded by this much (a neighbour holding a whole core) shrinks the team at once:
  // the spinning team runs a step ~10x slower meanwhile, and a wrong guess costs only kGrowAfter
  // on a smaller team.
  static constexpr double kShrinkAtOnceLoad = 0.85;
  static constexpr double kGrowAfterSeconds = 0.3;

  // `cpus`: the CPUs whose load is measured (all the machine's, as /proc/stat counts them).
  explicit HostTeamGovernor(int cpus) : cpus_(cpus < 1 ? 1 : cpus) {}

  // Feeds one window and `full`, the team size the user asked for. Returns the team size to
  // use now: `full`, or while crowded that less a thread per crowding core (rounded up, at
  // least 1; on two cores with one taken: 1).
  int observe(const LoadWindow& window, int full);
  // True while the governor keeps the team below full.
  bool reduced() const { return reduced_; }

 private:
  const int cpus_;
  bool reduced_ = false;
  int reduced_size_ = 1;
  double streak_seconds_ = 0;  // windows in a row that argue for leaving the current state
};

}  // namespace torch_tpu::runtime
