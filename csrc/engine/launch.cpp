#include "engine/launch.h"

#include <array>
#include <atomic>

#include "engine/deferral.h"
#include "engine/host_team.h"
#include "engine/issue_sites.h"
#include "engine/metrics.h"
#include "engine/mode.h"

namespace torch_tpu::engine {
namespace {

constexpr int kMaxChips = 64;
thread_local int t_current_device = 0;
thread_local std::array<int64_t, kMaxChips> t_current_stream{};  // all default (0)

std::atomic<BlockingWaitWrapper> g_wait_wrapper{nullptr};

}  // namespace

void set_blocking_wait_wrapper(BlockingWaitWrapper wrapper) { g_wait_wrapper.store(wrapper); }

void blocking_wait(const std::function<void()>& wait) {
  // A waiting main thread runs the queued kernels itself, with a team sized to the cores other
  // processes leave it; leaving the wait is a cheap point to sample how crowded they are.
  const HostWaitScope team;
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
    defer(stream, PendingOp{op_name, current_issue_site(), std::move(task), nullptr, {}},
          /*program_boundary=*/false, current_policy().bounds_program_size());
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

runtime::Stream& current_stream_flushed(int device, const char* reason) {
  runtime::Stream& stream = current_stream(device);
  flush(stream, reason);
  return stream;
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
