// A pointwise CPU kernel call as fused mode's loop engine runs it (fusible_op.h): the call, run
// on chunk views. Built by the op's description (ops/op_description.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "executors/host/cpu_kernel_call.h"
#include "executors/host/fusible_op.h"

namespace torch_tpu::executors::host {

// A pointwise op as the fused loop engine runs it: its kernel call, run with chunk views. For a
// multi-tensor op, one lane: the op on element `lane` of each of its lists (and of its list of
// scalars), run as the same op on one-element lists.
class FusibleKernelCall : public FusibleOp {
 public:
  FusibleKernelCall(const char* name, std::shared_ptr<const CpuKernelCall> call,
                    std::vector<int64_t> shape, bool reduces_rows = false, int lane = -1,
                    std::optional<c10::OperatorHandle> lane_out_variant = std::nullopt)
      : name_(name), call_(std::move(call)), shape_(std::move(shape)),
        reduces_rows_(reduces_rows), lane_(lane), lane_out_variant_(std::move(lane_out_variant)) {}

  // Adds the tensor at `slot` (captured tensors, then targets) of the call. Arguments are
  // read (an in-place op's self too), except out= arguments; fresh targets are only written.
  void add(size_t slot, const TensorSnapshot& snapshot, const at::Tensor& tensor,
           bool written, bool read);
  // The fused index of the tensor at `slot`, or -1.
  int tensor_at_slot(size_t slot) const {
    return slot < tensor_at_slot_.size() ? tensor_at_slot_[slot] : -1;
  }
  void set_expression(PointwiseExpression expression) {
    expression_ = std::move(expression);
    has_expression_ = true;
  }
  const PointwiseExpression* expression() const override {
    return has_expression_ ? &expression_ : nullptr;
  }

  const char* name() const override { return name_; }
  c10::IntArrayRef iteration_shape() const override { return shape_; }
  bool reduces_rows() const override { return reduces_rows_; }
  const std::vector<FusedTensor>& tensors() const override { return tensors_; }
  void run(const std::function<at::Tensor(size_t)>& view) const override;

 private:
  void run_lane(const std::function<at::Tensor(size_t)>& slot_view) const;

  const char* name_;
  std::shared_ptr<const CpuKernelCall> call_;
  std::vector<int64_t> shape_;
  std::vector<int> tensor_at_slot_;  // slot (captured tensors, then targets) -> tensors_ index
  std::vector<FusedTensor> tensors_;
  PointwiseExpression expression_;
  bool has_expression_ = false;
  bool reduces_rows_ = false;
  int lane_ = -1;
  std::optional<c10::OperatorHandle> lane_out_variant_;  // a functional multi-tensor op's out=
};

}  // namespace torch_tpu::executors::host
