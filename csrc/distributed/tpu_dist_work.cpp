#include "distributed/tpu_dist_work.h"

#include <thread>

#include <ATen/core/jit_type.h>
#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include "engine/deferral.h"
#include "engine/launch.h"

namespace torch_tpu::distributed {

TpuDistWork::TpuDistWork(int rank, c10d::OpType op, const char* profiling_title, int device,
                         runtime::Event done, std::vector<at::Tensor> outputs,
                         c10::Stream completion_stream, uint64_t sequence,
                         std::shared_ptr<CallerCoverage> coverage)
    : c10d::Work(rank, op, profiling_title),
      device_(device),
      done_(std::move(done)),
      outputs_(std::move(outputs)),
      sequence_(sequence),
      coverage_(std::move(coverage)) {
  const c10::Device tpu(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  future_ = c10::make_intrusive<c10::ivalue::Future>(
      c10::ListType::create(c10::TensorType::get()), std::vector<c10::Device>{tpu});
  // The future records its own marks on the current stream: make that the communication
  // stream, right after the collective, so waiting on the future waits for the collective.
  c10::StreamGuard on_completion_stream(completion_stream);
  future_->markCompleted(c10::IValue(outputs_));
}

bool TpuDistWork::isCompleted() { return done_.query(); }

bool TpuDistWork::isSuccess() const { return done_.query() && done_.error() == nullptr; }

std::exception_ptr TpuDistWork::exception() const {
  // Inspecting does not report it: the next sync point still raises it.
  const runtime::KeptErrorPtr error = done_.error();
  if (error == nullptr) return nullptr;
  return std::make_exception_ptr(c10::DistBackendError(
      c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, error->error.what()));
}

int TpuDistWork::sourceRank() const {
  TORCH_CHECK(source_rank_, "sourceRank() is only available for receives");
  TORCH_CHECK(done_.query(), "sourceRank() is known once the receive has completed (wait first)");
  return source_rank_();
}

std::vector<at::Tensor> TpuDistWork::result() { return outputs_; }

bool TpuDistWork::wait(std::chrono::milliseconds timeout) {
  blockCurrentStream();
  if (timeout != kNoTimeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    engine::blocking_wait([&] {
      while (!done_.query() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    TORCH_CHECK_WITH(DistBackendError, done_.query(), "tpu_dist: ",
                     c10d::opTypeToString(retrieveOpType()), " (collective #", sequence_,
                     ") did not complete within the wait timeout of ", timeout.count(), " ms");
  }
  // Already finished with an error: say so now rather than at the next sync point.
  if (done_.query()) engine::translate_errors([&] { done_.synchronize(); });
  return true;
}

void TpuDistWork::synchronize() { blockCurrentStream(); }

void TpuDistWork::blockCurrentStream() {
  runtime::Stream& caller = engine::current_stream(device_);
  const uint64_t before = caller.queued_count();
  engine::block_on_event(done_, caller);
  coverage_->waited(caller, before, caller.queued_count());
}

c10::intrusive_ptr<c10::ivalue::Future> TpuDistWork::getFuture() { return future_; }

}  // namespace torch_tpu::distributed
