// The autograd profiler's device hooks for tpu (torch.autograd.profiler.profile(use_device=
// "tpu")): each op's start and end are events on the current stream, as CUDA's are, so the
// profiler reports each op's device time. Built on the guard's events (guard.h).
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include "privateuse1/guard.h"

namespace torch_tpu::privateuse1 {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

class TpuProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    const c10::Device current = guard_.getDevice();
    if (device != nullptr) *device = current.index();
    void* raw = nullptr;
    guard_.record(&raw, guard_.getStream(current), current.index(), c10::EventFlag::BACKEND_DEFAULT);
    const c10::DeviceIndex index = current.index();
    *event = std::shared_ptr<void>(raw, [index](void* e) { TpuGuardImpl().destroyEvent(e, index); });
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
  }

  // Microseconds, as CUDA's stubs answer; waits for both marks.
  float elapsed(const ProfilerVoidEventStub* start, const ProfilerVoidEventStub* end) const override {
    guard_.synchronizeEvent(start->get());
    guard_.synchronizeEvent(end->get());
    return static_cast<float>(guard_.elapsedTime(start->get(), end->get(), -1) * 1000.0);
  }

  // tpu has no annotation ranges to push to.
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const c10::Device previous = guard_.getDevice();
    for (c10::DeviceIndex i = 0; i < guard_.deviceCount(); ++i) {
      guard_.setDevice(c10::Device(c10::DeviceType::PrivateUse1, i));
      op(i);
    }
    guard_.setDevice(previous);
  }

  void synchronize() const override {
    for (c10::DeviceIndex i = 0; i < guard_.deviceCount(); ++i) guard_.synchronizeDevice(i);
  }

 private:
  TpuGuardImpl guard_;
};

const bool registered = [] {
  static TpuProfilerStubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

}  // namespace
}  // namespace torch_tpu::privateuse1
