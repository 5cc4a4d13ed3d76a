#include "engine/host_team.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <omp.h>

#include "engine/mode.h"
#include "runtime/host_load.h"
#include "runtime/stream.h"

// libgomp's and MKL's per-thread thread counts, resolved through torch's libraries. Weak: a
// torch build without MKL simply lacks that symbol (then it is null). MKL's BLAS starts its own
// OpenMP team from MKL's count, so both must be set. (MKL's lower-case name is its Fortran
// entry point, which takes a pointer; this is the C one.)
extern "C" void omp_set_num_threads(int) __attribute__((weak));
extern "C" int MKL_Set_Num_Threads_Local(int) __attribute__((weak));

namespace torch_tpu::engine {
namespace {

// The thread that loaded us (the Python main thread, in practice).
const std::thread::id g_main_thread = std::this_thread::get_id();

bool on_main_thread() { return std::this_thread::get_id() == g_main_thread; }

// Sets the calling thread's intra-op threads. PyTorch initialises each thread's count lazily,
// from the process-wide setting (once a program has called torch.set_num_threads), on the
// thread's first parallel kernel, so both initialisations must run before ours or they undo
// it: libtorch's (asking it for the count runs it) and this library's own. The flag that
// records it is a thread_local of an inline header function, and each shared library keeps
// its own copy: without the second call, the first fused kernel's parallel loop on a worker
// reset the worker to the process-wide count and started a second OpenMP team.
void use_threads_on_this_thread(int threads) {
  at::get_num_threads();
  at::internal::lazy_init_num_threads();
  if (omp_set_num_threads != nullptr) omp_set_num_threads(threads);
  if (MKL_Set_Num_Threads_Local != nullptr) MKL_Set_Num_Threads_Local(threads);
}

// --- TORCH_TPU_HOST_TEAM ------------------------------------------------------------------------

struct PolicySetting {
  HostTeamPolicy policy = HostTeamPolicy::kAuto;
  std::string problem;
};

const PolicySetting& policy_setting() {
  static const PolicySetting setting = [] {
    PolicySetting parsed;
    const char* value = std::getenv("TORCH_TPU_HOST_TEAM");
    if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) return parsed;
    if (std::strcmp(value, "fixed") == 0) {
      parsed.policy = HostTeamPolicy::kFixed;
    } else {
      parsed.problem = std::string("TORCH_TPU_HOST_TEAM='") + value +
                       "' is not understood (expected 'auto' or 'fixed'); using 'auto'";
    }
    return parsed;
  }();
  return setting;
}

// --- the main thread's team ----------------------------------------------------------------------

// What metrics() reports; written on the main thread, read on any.
std::atomic<int> g_threads{0};
std::atomic<int64_t> g_shrinks{0};
std::atomic<int64_t> g_grows{0};
std::atomic<double> g_others_load{-1.0};  // negative: no window yet

// Touched on the main thread only.
struct MainTeam {
  runtime::HostLoadSampler sampler;
  runtime::HostTeamGovernor governor{static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))};
  int wait_threads = 0;  // the team size host waits use while the governor keeps it small; 0: full
  int open_scopes = 0;   // HostWaitScopes open (a wait inside a wait nests)
  int user_threads = 0;  // the user's count, as the outermost open scope found it
  bool lowered = false;  // the thread's count is below user_threads until the scopes close
};

MainTeam& main_team() {
  static MainTeam team;
  return team;
}

// Feeds the governor once a sampling window has elapsed, and applies what it says to later
// host waits.
void adjust(MainTeam& team) {
  const std::optional<runtime::LoadWindow> window = team.sampler.sample();
  if (!window) return;
  g_others_load.store(window->others_load, std::memory_order_relaxed);
  // Inside a wait the thread's count may be the governor's: the user's is the one saved.
  const int user = team.open_scopes > 0 ? team.user_threads : at::get_num_threads();
  if (host_team_policy() == HostTeamPolicy::kFixed) {
    g_threads.store(user, std::memory_order_relaxed);
    return;
  }
  const int before = team.wait_threads == 0 ? user : std::min(team.wait_threads, user);
  const int size = team.governor.observe(*window, user);
  team.wait_threads = size < user ? size : 0;
  if (size < before) {
    // OpenMP 5.0: the full team's helper threads exit now instead of spinning for work on the
    // cores the neighbours hold; later waits start no more of them.
    if (!omp_in_parallel()) omp_pause_resource_all(omp_pause_soft);
    g_shrinks.fetch_add(1, std::memory_order_relaxed);
  } else if (size > before) {
    g_grows.fetch_add(1, std::memory_order_relaxed);
  }
  g_threads.store(size, std::memory_order_relaxed);
}

// Sizing the team is an optimisation: a failure keeps the current size, and the wait goes on.
void adjust_without_throwing(MainTeam& team) noexcept {
  try {
    adjust(team);
  } catch (...) {
  }
}

// The team size host waits use now (0: the thread's full count). Under
// torch.use_deterministic_algorithms(True) it is one thread: a kernel's reductions split by
// team size, and the same kernel runs on a worker's single thread or in a takeover by the
// waiting main thread as timing decides, so only one size everywhere makes results
// reproducible run to run (they are then CPU's one-thread results).
int wait_team_size(const MainTeam& team) {
  if (at::globalContext().deterministicAlgorithms()) return 1;
  return team.wait_threads;
}

// Inside a wait: gives the thread the team size waits use now, if smaller.
void lower_for_the_wait(MainTeam& team) {
  const int size = wait_team_size(team);
  if (size == 0 || size >= at::get_num_threads() || omp_in_parallel()) return;
  use_threads_on_this_thread(size);
  team.lowered = true;
}

// --- the runtime's hooks ----------------------------------------------------------------------

// Between the tasks a waiting main thread runs: a fused program's whole step is one wait, and
// a neighbour arriving in it would otherwise keep a full team spinning to its end.
void between_host_tasks() {
  if (!on_main_thread()) return;
  MainTeam& team = main_team();
  if (team.open_scopes == 0) return;  // waits outside engine::blocking_wait sample at their end
  adjust_without_throwing(team);
  try {
    lower_for_the_wait(team);
  } catch (...) {  // an optimisation: the wait goes on with the team it has
  }
}

// Only the main thread runs kernels with an OpenMP team; workers and other host threads (the
// autograd engine's, user threads) run them single-threaded. Each extra team makes libgomp
// throttle the spinning of every team, which halves the speed of all parallel kernels in the
// process, CPU eager included (see runtime/stream.h).
void size_executor_parallelism(bool is_stream_worker) {
  if (is_stream_worker || !on_main_thread()) use_threads_on_this_thread(1);
}

// After a takeover the main thread's OpenMP helpers spin for more work for milliseconds
// (libgomp's default wait policy, fixed when the library loads). The host then goes back to
// issuing (Strict) or recording (fused) ops while the worker runs what it has: three busy
// threads, and on a 2-core machine the spinning helper takes the core the worker needs (in a
// fused training step it spun for a fifth of all samples; releasing made fused training
// 4-6% and inference 11% faster, docs/performance.md). So after a long takeover the host
// frees its team. Starting the next team costs ~0.2 ms, hence the bound: short takeovers (a
// sync-heavy loop of small ops) keep theirs. Debug mode has no worker running alongside the
// host.
constexpr auto kLongTakeover = std::chrono::milliseconds(2);

void after_host_takeover(std::chrono::steady_clock::duration ran_for) {
  if (!on_main_thread()) return;
  // Waits that bypass engine::blocking_wait (tpu_dist's) sample here too.
  adjust_without_throwing(main_team());
  if (ran_for < kLongTakeover || !current_policy().host_runs_beside_worker()) return;
  // OpenMP 5.0: frees the calling thread's team; its helper threads exit.
  omp_pause_resource_all(omp_pause_soft);
}

}  // namespace

void install_host_team_hooks() {
  runtime::set_executor_thread_hook(&size_executor_parallelism);
  runtime::set_host_takeover_hook(&after_host_takeover);
  runtime::set_host_between_tasks_hook(&between_host_tasks);
}

HostTeamPolicy host_team_policy() { return policy_setting().policy; }

const std::string& host_team_setting_problem() { return policy_setting().problem; }

HostWaitScope::HostWaitScope() : on_main_thread_(on_main_thread()) {
  if (!on_main_thread_) return;
  MainTeam& team = main_team();
  if (team.open_scopes++ > 0) return;
  team.user_threads = at::get_num_threads();
  // The count is per thread and kernels read it as they start: lowering it for the wait
  // shrinks the team the takeover runs kernels with, and restoring it after keeps the user's
  // setting (torch.get_num_threads(), CPU eager) as it was.
  lower_for_the_wait(team);
}

HostWaitScope::~HostWaitScope() {
  if (!on_main_thread_) return;
  MainTeam& team = main_team();
  if (--team.open_scopes > 0) return;
  if (team.lowered) use_threads_on_this_thread(team.user_threads);
  team.lowered = false;
  adjust_without_throwing(team);
}

HostTeamMetrics host_team_metrics() {
  HostTeamMetrics metrics;
  metrics.policy = host_team_policy();
  metrics.threads = g_threads.load(std::memory_order_relaxed);
  if (metrics.threads == 0) metrics.threads = at::get_num_threads();
  metrics.shrinks = g_shrinks.load(std::memory_order_relaxed);
  metrics.grows = g_grows.load(std::memory_order_relaxed);
  const double load = g_others_load.load(std::memory_order_relaxed);
  if (load >= 0) metrics.others_load = load;
  return metrics;
}

void reset_host_team_metrics() {
  g_shrinks.store(0, std::memory_order_relaxed);
  g_grows.store(0, std::memory_order_relaxed);
}

}  // namespace torch_tpu::engine
