#include "engine/launch.h"

#include <array>
#include <atomic>
#include <thread>

#include <ATen/Parallel.h>
#include <omp.h>

#include "engine/deferral.h"
#include "engine/issue_sites.h"
#include "engine/metrics.h"
#include "engine/mode.h"

namespace torch_tpu::engine {
namespace {

constexpr int kMaxChips = 64;
thread_local int t_current_device = 0;
thread_local std::array<int64_t, kMaxChips> t_current_stream{};  // all default (0)

std::atomic<BlockingWaitWrapper> g_wait_wrapper{nullptr};

// The thread that loaded us (the Python main thread, in practice).
const std::thread::id g_main_thread = std::this_thread::get_id();

}  // namespace
}  // namespace torch_tpu::engine

// libgomp's and MKL's per-thread thread counts, resolved through torch's libraries. Weak: a
// torch build without MKL simply lacks that symbol (then it is null). MKL's BLAS starts its own
// OpenMP team from MKL's count, so both must be set. (MKL's lower-case name is its Fortran
// entry point, which takes a pointer; this is the C one.)
extern "C" void omp_set_num_threads(int) __attribute__((weak));
extern "C" int MKL_Set_Num_Threads_Local(int) __attribute__((weak));

namespace torch_tpu::engine {
namespace {

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

// Only the main thread runs kernels with an OpenMP team; workers and other host threads (the
// autograd engine's, user threads) run them single-threaded. Each extra team makes libgomp
// throttle the spinning of every team, which halves the speed of all parallel kernels in the
// process, CPU eager included (see runtime/stream.h).
void size_executor_parallelism(bool is_stream_worker) {
  if (is_stream_worker || std::this_thread::get_id() != g_main_thread) use_threads_on_this_thread(1);
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

void release_host_team_after_long_takeover(std::chrono::steady_clock::duration ran_for) {
  if (ran_for < kLongTakeover ||
      std::this_thread::get_id() != g_main_thread || !current_policy().host_runs_beside_worker()) {
    return;
  }
  // OpenMP 5.0: frees the calling thread's team; its helper threads exit.
  omp_pause_resource_all(omp_pause_soft);
}

const bool g_executor_hook_set = [] {
  runtime::set_executor_thread_hook(&size_executor_parallelism);
  runtime::set_host_takeover_hook(&release_host_team_after_long_takeover);
  return true;
}();

}  // namespace

void set_blocking_wait_wrapper(BlockingWaitWrapper wrapper) { g_wait_wrapper.store(wrapper); }

void blocking_wait(const std::function<void()>& wait) {
  const BlockingWaitWrapper wrapper = g_wait_wrapper.load();
  if (wrapper != nullptr) {
    wrapper(wait);
  } else {
    wait();
  }
}

runtime::Chip& chip(int index) {
  return translate_errors([&]() -> runtime::Chip& { return runtime::Runtime::instance().chip(index); });
}

int current_device() { return t_current_device; }

void set_current_device(int index) {
  chip(index);  // validates the index
  t_current_device = index;
}

int64_t current_stream_id(int device) { return t_current_stream[device]; }

void set_current_stream_id(int device, int64_t stream_id) {
  translate_errors([&] { chip(device).stream(stream_id); });  // validates the id
  t_current_stream[device] = stream_id;
}

runtime::Stream& current_stream(int device) {
  return translate_errors(
      [&]() -> runtime::Stream& { return chip(device).stream(t_current_stream[device]); });
}

void launch(int device, const char* op_name, runtime::Task task) {
  runtime::Stream& stream = current_stream(device);
  if (current_policy().defers_ops()) {
    defer(stream, PendingOp{op_name, current_issue_site(), std::move(task), nullptr, {}});
  } else {
    stream.enqueue(op_name, std::move(task), current_issue_site());
  }
  count_op_launched();
  if (current_policy().waits_for_each_op()) sync_stream(stream, "debug_mode");
}

void sync_stream(runtime::Stream& stream, const char* reason) {
  count_sync(reason);
  translate_errors([&] { blocking_wait([&] { synchronize_stream(stream, reason); }); });
}

void sync_current_stream(int device, const char* reason) {
  sync_stream(current_stream(device), reason);
}

void sync_device(int device, const char* reason) {
  count_sync(reason);
  runtime::Chip& target = chip(device);
  flush_chip(device, reason);
  translate_errors([&] { blocking_wait([&] { target.synchronize(); }); });
}

}  // namespace torch_tpu::engine
