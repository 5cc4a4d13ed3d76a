#include "engine/launch.h"

#include <algorithm>
#include <array>
#include <atomic>

#include "engine/metrics.h"
#include "engine/mode.h"

namespace torch_tpu::engine {
namespace {

constexpr int kMaxChips = 64;
thread_local int t_current_device = 0;
thread_local std::array<int64_t, kMaxChips> t_current_stream{};  // all default (0)

std::atomic<BlockingWaitWrapper> g_wait_wrapper{nullptr};

// libgomp (PyTorch's intra-op pool), loaded with torch. Both act on the calling thread only.
extern "C" void omp_set_num_threads(int);
extern "C" int omp_get_max_threads();

// Intra-op threads for the next task on this worker: all cores while the host waits for the
// chip, one core fewer while the host runs Python ahead of it. Oversubscribing the cores makes
// OpenMP's spinning barriers stall on a descheduled thread, which costs far more than a core.
void size_task_parallelism(bool host_waiting) {
  thread_local const int all_cores = omp_get_max_threads();
  thread_local int current = all_cores;
  const int wanted = host_waiting ? all_cores : std::max(1, all_cores - 1);
  if (wanted != current) {
    omp_set_num_threads(wanted);
    current = wanted;
  }
}

const bool g_task_hook_set = [] {
  runtime::set_task_start_hook(&size_task_parallelism);
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
  stream.enqueue(op_name, std::move(task));
  count_op_launched();
  if (current_mode() == ExecutionMode::kDebug) {
    sync_stream(stream, "debug_mode");
  }
}

void sync_stream(runtime::Stream& stream, const char* reason) {
  count_sync(reason);
  translate_errors([&] { blocking_wait([&] { stream.synchronize(); }); });
}

void sync_current_stream(int device, const char* reason) {
  sync_stream(current_stream(device), reason);
}

void sync_device(int device, const char* reason) {
  count_sync(reason);
  runtime::Chip& target = chip(device);
  translate_errors([&] { blocking_wait([&] { target.synchronize(); }); });
}

}  // namespace torch_tpu::engine
