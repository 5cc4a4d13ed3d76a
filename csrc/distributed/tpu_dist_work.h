// The Work a tpu_dist collective returns. Completion is stream-ordered, as with NCCL: the
// collective runs on the group's communication stream, and a mark (event) after it tells when
// it is done. wait() makes the caller's current stream wait for that mark without blocking the
// host; the future is completed with the output tensors in the same stream-ordered way, so
// DDP's comm hooks chain device work onto it. A failure reaches whoever waits, naming the op.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "distributed/caller_coverage.h"
#include "runtime/event.h"

namespace torch_tpu::distributed {

class TpuDistWork : public c10d::Work {
 public:
  // `done` is recorded after the collective on chip `device`; `outputs` are its results.
  // Completes the future on `completion_stream` (the communication stream). Waits are reported
  // to `coverage` (the launcher's).
  TpuDistWork(int rank, c10d::OpType op, const char* profiling_title, int device,
              runtime::Event done, std::vector<at::Tensor> outputs, c10::Stream completion_stream,
              uint64_t sequence, std::shared_ptr<CallerCoverage> coverage);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  // Makes the current stream wait for the collective. With a timeout, also blocks the host up
  // to `timeout` and raises if the collective is not done by then.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  void synchronize() override;
  void blockCurrentStream() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  uint64_t getSequencenumber() const override { return sequence_; }
  // Receives from any rank: who sent, once complete.
  int sourceRank() const override;
  void set_source_rank(std::function<int()> source_rank) { source_rank_ = std::move(source_rank); }

 private:
  const int device_;
  runtime::Event done_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  const uint64_t sequence_;
  std::function<int()> source_rank_;
  const std::shared_ptr<CallerCoverage> coverage_;
};

}  // namespace torch_tpu::distributed
