// DDP's step timer for tpu (c10d's TimerRegistry has CPU and CUDA ones): device events on the
// current stream, as CUDA's timer uses, so DDP's logging data reports forward, backward and
// communication times for tpu models instead of warning that it cannot.
#include <optional>

#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

namespace torch_tpu::distributed {

class TpuTimer : public c10d::Timer {
 public:
  explicit TpuTimer(c10::Device device) : device_(device) {}

  void record(Event event) override {
    Timer::record(event);  // the host-side timestamp DDP also reads
    const c10::DeviceGuard guard(device_);
    const c10::impl::VirtualGuardImpl impl(c10::DeviceType::PrivateUse1);
    event_of(event).record(impl.getStream(device_));
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    c10::Event& from = event_of(start);
    c10::Event& to = event_of(end);
    if (!from.was_marked_for_recording() || !to.was_marked_for_recording()) return std::nullopt;
    from.synchronize();
    to.synchronize();
    const double milliseconds = from.elapsedTime(to);
    if (milliseconds < 0) return std::nullopt;  // recorded out of order: no interval
    return static_cast<int64_t>(milliseconds * 1e6);
  }

 private:
  c10::Event& event_of(Event event) {
    switch (event) {
      case Event::kForwardStart: return forward_start_;
      case Event::kBackwardComputeStart: return backward_compute_start_;
      case Event::kBackwardComputeEnd: return backward_compute_end_;
      case Event::kBackwardCommStart: return backward_comm_start_;
      case Event::kBackwardCommEnd: break;
    }
    return backward_comm_end_;
  }

  static c10::Event timed_event() {
    return c10::Event(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT);
  }

  c10::Device device_;
  c10::Event forward_start_ = timed_event();
  c10::Event backward_compute_start_ = timed_event();
  c10::Event backward_compute_end_ = timed_event();
  c10::Event backward_comm_start_ = timed_event();
  c10::Event backward_comm_end_ = timed_event();
};

}  // namespace torch_tpu::distributed

namespace c10d {
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, torch_tpu::distributed::TpuTimer)
}  // namespace c10d
