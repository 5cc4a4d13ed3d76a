#include "distributed/tensor_rules.h"

#include <algorithm>

#include <ATen/ops/view_as_real.h>
#include <c10/util/Exception.h>

#include "distributed/c10d_names.h"
#include "privateuse1/tpu_tensor.h"

namespace torch_tpu::distributed {

using c10d::ReduceOp;

namespace {

// Gloo moves these dtypes itself; others travel as their bytes (data movement only).
bool transport_knows(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat: case c10::kDouble: case c10::kHalf: case c10::kBFloat16:
    case c10::kChar: case c10::kByte: case c10::kInt: case c10::kLong: case c10::kBool:
      return true;
    default:
      return false;
  }
}

}  // namespace

using privateuse1::is_tpu;

bool check_call(const char* op, std::initializer_list<const TensorList*> groups) {
  const at::Tensor* first = nullptr;
  for (const TensorList* group : groups) {
    for (const at::Tensor& tensor : *group) {
      TORCH_CHECK(tensor.defined(), "tpu_dist: ", op, " got an undefined tensor");
      TORCH_CHECK(tensor.layout() == c10::kStrided, "tpu_dist: ", op,
                  " supports only dense (strided) tensors, got layout ", tensor.layout());
      if (first == nullptr) {
        first = &tensor;
        TORCH_CHECK(is_tpu(tensor) || tensor.device().is_cpu(), "tpu_dist: ", op,
                    " takes tpu or CPU tensors, got one on ", tensor.device());
      }
      TORCH_CHECK(tensor.device() == first->device(), "tpu_dist: ", op,
                  " needs all tensors on one device, got ", first->device(), " and ",
                  tensor.device());
      TORCH_CHECK(tensor.scalar_type() == first->scalar_type(), "tpu_dist: ", op,
                  " needs all tensors to have one dtype, got ", first->scalar_type(), " and ",
                  tensor.scalar_type());
      if (is_tpu(tensor)) {
        // As NCCL: dense in some memory format (channels-last is fine); the bytes move as laid out.
        TORCH_CHECK(tensor.is_contiguous(tensor.suggest_memory_format()), "tpu_dist: ", op,
                    " needs contiguous tensors, got one with sizes ", tensor.sizes(),
                    " and strides ", tensor.strides());
      }
    }
  }
  TORCH_CHECK(first != nullptr, "tpu_dist: ", op, " got no tensors");
  return is_tpu(*first);
}

void check_same_sizes(const char* op, const TensorList& tensors, c10::IntArrayRef sizes,
                      const char* what) {
  for (const at::Tensor& tensor : tensors) {
    TORCH_CHECK(tensor.sizes() == sizes, "tpu_dist: ", op, ": every ", what, " must have sizes ",
                sizes, ", got ", tensor.sizes());
  }
}

void check_count(const char* op, size_t count, size_t expected, const char* what) {
  TORCH_CHECK(count == expected, "tpu_dist: ", op, " expects ", expected, " ", what, ", got ",
              count);
}

at::Tensor movable(const at::Tensor& view, bool keep_rows) {
  if (transport_knows(view.scalar_type())) return view;
  // The memory as laid out (dense: checked at issue), never a copy: the transport writes here.
  const at::Tensor flat = keep_rows && view.dim() > 0
                              ? view.as_strided({view.size(0), view.numel() / std::max<int64_t>(view.size(0), 1)},
                                                {view.numel() / std::max<int64_t>(view.size(0), 1), 1})
                              : view.as_strided({view.numel()}, {1});
  return flat.view(at::kByte);
}

TensorList movable(const TensorList& views, bool keep_rows) {
  TensorList result;
  result.reserve(views.size());
  for (const at::Tensor& view : views) result.push_back(movable(view, keep_rows));
  return result;
}

at::Tensor flat(const at::Tensor& view) {
  return view.is_contiguous() ? view.view({-1}) : view.as_strided({view.numel()}, {1});
}

void check_reducible(const char* op, const at::Tensor& tensor, const ReduceOp& reduce_op) {
  const c10::ScalarType dtype = tensor.scalar_type();
  if (c10::isComplexType(dtype)) {
    TORCH_CHECK(c10d::isComplexViewAsRealAllowed(reduce_op), "tpu_dist: ", op,
                " of complex tensors supports SUM, AVG and PREMUL_SUM only");
    return;
  }
  TORCH_CHECK(transport_knows(dtype), "tpu_dist: ", op, " does not support ", dtype,
              " tensors (reductions support float32, float64, float16, bfloat16, int8, uint8, "
              "int32, int64 and bool)");
  TORCH_CHECK(reduce_op.op_ != ReduceOp::AVG || c10::isFloatingType(dtype), "tpu_dist: ", op,
              " with ReduceOp.AVG needs a floating-point dtype, got ", dtype);
}

at::Tensor reducible(const at::Tensor& view) {
  return view.is_complex() ? at::view_as_real(view) : view;
}

TensorList reducible(const TensorList& views) {
  TensorList result;
  for (const at::Tensor& view : views) result.push_back(reducible(view));
  return result;
}

Reduction reduction_of(const ReduceOp& requested) {
  if (requested.op_ != ReduceOp::PREMUL_SUM) return {requested, std::nullopt, std::nullopt};
  const auto* supplement = dynamic_cast<PreMulSumSupplement*>(requested.supplement_.get());
  TORCH_CHECK(supplement != nullptr, "tpu_dist: PREMUL_SUM without a factor");
  Reduction reduction{ReduceOp(ReduceOp::SUM), std::nullopt, std::nullopt};
  if (supplement->tensor_factor.defined() && is_tpu(supplement->tensor_factor)) {
    reduction.factor_tensor = supplement->tensor_factor;  // read where the call runs
  } else if (supplement->tensor_factor.defined()) {
    reduction.factor = supplement->tensor_factor.item<double>();
  } else {
    reduction.factor = supplement->double_factor;
  }
  return reduction;
}

void premultiply(const Reduction& reduction, at::Tensor& view, const at::Tensor* factor_view) {
  if (reduction.factor) {
    view.mul_(*reduction.factor);
  } else if (factor_view != nullptr) {
    view.mul_(factor_view->to(c10::kCPU));
  }
}

CallSignature signature_of(c10d::OpType op, const at::Tensor& shaped, int64_t reduce_op, int64_t root,
                           bool shape_checked) {
  CallSignature signature;
  signature.op = op;
  signature.reduce_op = reduce_op;
  signature.root = root;
  signature.dtype = shaped.scalar_type();
  signature.shape_checked = shape_checked;
  if (shape_checked) signature.shape = shaped.sizes().vec();
  return signature;
}

CallSignature signature_of_many(c10d::OpType op, const TensorList& tensors, int64_t reduce_op) {
  CallSignature signature = signature_of(op, tensors.front(), reduce_op);
  int64_t total = 0;
  for (const at::Tensor& tensor : tensors) total += tensor.numel();
  signature.shape = {static_cast<int64_t>(tensors.size()), total};
  return signature;
}

TensorList flatten(const std::vector<TensorList>& lists) {
  TensorList flat;
  for (const TensorList& list : lists) flat.insert(flat.end(), list.begin(), list.end());
  return flat;
}

}  // namespace torch_tpu::distributed
