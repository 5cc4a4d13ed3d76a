// The host threads' OpenMP teams. Only the main thread (the one that loaded the library) runs
// kernels with a team; stream workers and other host threads run them on one thread. The main
// thread runs the chip's kernels while it waits for them (a host wait takes over the stream's
// queue), and while other processes crowd the machine's cores (TORCH_TPU_HOST_TEAM=auto, the
// default) it waits with a smaller team: on two cores with a busy neighbour, a full team's
// helper would spin-wait for a core that is not there. The user's count
// (torch.set_num_threads) is left alone outside host waits. Under
// torch.use_deterministic_algorithms(True) host waits run kernels on one thread, as workers do,
// so a kernel rounds the same whichever thread runs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace torch_tpu::engine {

enum class HostTeamPolicy {
  kAuto,   // host waits use a team sized to the cores others leave (runtime/host_load.h)
  kFixed,  // host waits use the main thread's count as torch.set_num_threads left it
};

// TORCH_TPU_HOST_TEAM ("auto" or "fixed"), read once; unset, empty or not understood: auto.
HostTeamPolicy host_team_policy();
// Why TORCH_TPU_HOST_TEAM was not understood, naming the allowed values; empty when it was.
// The Python module warns with it at import.
const std::string& host_team_setting_problem();

// Brackets a host wait (engine::blocking_wait). On the main thread, while the governor keeps
// the team small, it lowers the thread's intra-op count for the wait and restores it after;
// on leaving it samples others' load (at most every 100 ms; otherwise one clock read) and lets
// the governor decide. Elsewhere it does nothing. Nests; never throws.
class HostWaitScope {
 public:
  HostWaitScope();
  ~HostWaitScope();
  HostWaitScope(const HostWaitScope&) = delete;
  HostWaitScope& operator=(const HostWaitScope&) = delete;

 private:
  bool on_main_thread_ = false;
};

struct HostTeamMetrics {
  HostTeamPolicy policy = HostTeamPolicy::kAuto;
  // The team size host waits use, as of the last sample (before the first: the calling
  // thread's count).
  int threads = 0;
  int64_t shrinks = 0;  // times the governor made the team smaller (since the last reset)
  int64_t grows = 0;    // times it gave the full team back
  std::optional<double> others_load;  // other processes' cores busy, last window; none yet
};
// Thread-safe.
HostTeamMetrics host_team_metrics();

// Installs the runtime's thread hooks that size executor threads' teams and adjust the main
// thread's after a host takeover. Called once by the Python module, before any stream runs.
void install_host_team_hooks();
// Zeroes shrinks and grows (the team's state stays).
void reset_host_team_metrics();

}  // namespace torch_tpu::engine
