#include "runtime/host_load.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace torch_tpu::runtime {

std::optional<uint64_t> parse_busy_jiffies(std::string_view proc_stat) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": the aggregate line
  // ("cpu0" and on are single CPUs). guest time is already inside user, so it is not added.
  constexpr std::string_view kPrefix = "cpu ";
  if (proc_stat.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view line = proc_stat.substr(kPrefix.size());
  line = line.substr(0, line.find('\n'));
  std::array<uint64_t, 8> fields{};  // up to steal; older kernels may stop earlier
  size_t count = 0;
  const char* p = line.data();
  const char* const end = line.data() + line.size();
  while (count < fields.size()) {
    while (p != end && *p == ' ') ++p;
    if (p == end) break;
    const auto [next, error] = std::from_chars(p, end, fields[count]);
    if (error != std::errc() || (next != end && *next != ' ')) return std::nullopt;
    p = next;
    ++count;
  }
  if (count < 4) return std::nullopt;  // not even user, nice, system, idle
  return fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7];
}

double others_load_cores(double machine_busy_seconds, double own_cpu_seconds, double wall_seconds) {
  if (!(wall_seconds > 0)) return 0;
  return std::max(0.0, (machine_busy_seconds - own_cpu_seconds) / wall_seconds);
}

std::optional<HostLoadSampler::Reading> HostLoadSampler::read_now() {
  Reading reading;
  reading.time = std::chrono::steady_clock::now();
  // The aggregate line comes first and is far shorter than the buffer; the rest (per-CPU lines,
  // the long interrupt line) is never read.
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::array<char, 512> buffer;
  const ssize_t got = ::read(fd, buffer.data(), buffer.size());
  ::close(fd);
  if (got <= 0) return std::nullopt;
  const std::string_view text(buffer.data(), static_cast<size_t>(got));
  if (text.find('\n') == std::string_view::npos) return std::nullopt;  // line cut short
  const std::optional<uint64_t> jiffies = parse_busy_jiffies(text);
  static const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (!jiffies || ticks_per_second <= 0) return std::nullopt;
  reading.machine_busy_seconds =
      static_cast<double>(*jiffies) / static_cast<double>(ticks_per_second);
  timespec own{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &own) != 0) return std::nullopt;
  reading.own_cpu_seconds =
      static_cast<double>(own.tv_sec) + static_cast<double>(own.tv_nsec) * 1e-9;
  return reading;
}

std::optional<LoadWindow> HostLoadSampler::sample() {
  if (unavailable_) return std::nullopt;
  if (window_start_ && std::chrono::steady_clock::now() - window_start_->time < kWindow) {
    return std::nullopt;
  }
  const std::optional<Reading> now = read_now();
  if (!now) {
    unavailable_ = true;  // no /proc (a sandbox): keep every later call to the clock check
    return std::nullopt;
  }
  std::optional<LoadWindow> window;
  if (window_start_) {
    window.emplace();
    window->seconds = std::chrono::duration<double>(now->time - window_start_->time).count();
    window->others_load =
        others_load_cores(now->machine_busy_seconds - window_start_->machine_busy_seconds,
                          now->own_cpu_seconds - window_start_->own_cpu_seconds, window->seconds);
  }
  window_start_ = now;
  return window;
}

int HostTeamGovernor::observe(const LoadWindow& window, int full) {
  // Windows are measured, so two nominal 100-ms ones may sum to a hair under 0.2 s.
  constexpr double kSlack = 1e-6;
  full = std::max(full, 1);
  // Load that the cores the full team leaves free cannot absorb: it takes the team's cores.
  const double crowding = window.others_load - std::max(0, cpus_ - full);
  if (!reduced_) {
    streak_seconds_ = crowding >= kShrinkLoad ? streak_seconds_ + window.seconds : 0;
    const bool at_once = crowding >= kShrinkAtOnceLoad && window.seconds >= 0.1 - kSlack;
    if (at_once || streak_seconds_ >= kShrinkAfterSeconds - kSlack) {
      reduced_ = true;
      streak_seconds_ = 0;
      reduced_size_ = std::max(1, full - static_cast<int>(std::ceil(crowding)));
    }
  } else {
    streak_seconds_ = crowding <= kGrowLoad ? streak_seconds_ + window.seconds : 0;
    if (streak_seconds_ >= kGrowAfterSeconds - kSlack) {
      reduced_ = false;
      streak_seconds_ = 0;
    }
  }
  return reduced_ ? std::min(reduced_size_, full) : full;
}

}  // namespace torch_tpu::runtime
