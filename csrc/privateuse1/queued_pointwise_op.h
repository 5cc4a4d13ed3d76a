// A recorded generic op as fused mode's loop engine runs it (executors/host/fusible_op.h), built
// by the op's description (privateuse1/fusible_ops.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "executors/host/fusible_op.h"
#include "privateuse1/queued_op.h"

namespace torch_tpu::privateuse1 {

// A pointwise op as the fused loop engine runs it: the queued op, run with chunk views. For a
// multi-tensor op, one lane: the op on element `lane` of each of its lists (and of its list of
// scalars), run as the same op on one-element lists.
class QueuedPointwiseOp : public executors::host::FusibleOp {
 public:
  QueuedPointwiseOp(const char* name, std::shared_ptr<const QueuedOp> queued,
                    std::vector<int64_t> shape, bool reduces_rows = false, int lane = -1,
                    std::optional<c10::OperatorHandle> lane_out_variant = std::nullopt)
      : name_(name), queued_(std::move(queued)), shape_(std::move(shape)),
        reduces_rows_(reduces_rows), lane_(lane), lane_out_variant_(std::move(lane_out_variant)) {}

  // Adds the tensor at `slot` (captured tensors, then targets) of the queued op. Arguments are
  // read (an in-place op's self too), except out= arguments; fresh targets are only written.
  void add(size_t slot, const executors::host::TensorSnapshot& snapshot, const at::Tensor& tensor,
           bool written, bool read);
  // The fused index of the tensor at `slot`, or -1.
  int tensor_at_slot(size_t slot) const {
    return slot < tensor_at_slot_.size() ? tensor_at_slot_[slot] : -1;
  }
  void set_expression(executors::host::PointwiseExpression expression) {
    expression_ = std::move(expression);
    has_expression_ = true;
  }
  const executors::host::PointwiseExpression* expression() const override {
    return has_expression_ ? &expression_ : nullptr;
  }

  const char* name() const override { return name_; }
  c10::IntArrayRef iteration_shape() const override { return shape_; }
  bool reduces_rows() const override { return reduces_rows_; }
  const std::vector<executors::host::FusedTensor>& tensors() const override { return tensors_; }
  void run(const std::function<at::Tensor(size_t)>& view) const override;

 private:
  void run_lane(const std::function<at::Tensor(size_t)>& slot_view) const;

  const char* name_;
  std::shared_ptr<const QueuedOp> queued_;
  std::vector<int64_t> shape_;
  std::vector<int> tensor_at_slot_;  // slot (captured tensors, then targets) -> tensors_ index
  std::vector<executors::host::FusedTensor> tensors_;
  executors::host::PointwiseExpression expression_;
  bool has_expression_ = false;
  bool reduces_rows_ = false;
  int lane_ = -1;
  std::optional<c10::OperatorHandle> lane_out_variant_;  // a functional multi-tensor op's out=
};

}  // namespace torch_tpu::privateuse1
