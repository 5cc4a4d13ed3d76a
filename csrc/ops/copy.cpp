// Copies between host and chip, and between chips, plus reading one value back (.item()).
// Host -> chip copies are queued (pageable sources are staged first, so the caller may reuse
// them at once); chip -> host copies wait for the chip unless they are non_blocking into
// pinned memory, exactly as CUDA behaves.
#include <array>

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>

#include "engine/active_executor.h"
#include "engine/deferral.h"
#include "engine/launch.h"
#include "engine/metrics.h"
#include "executors/host/tensor_snapshot.h"
#include "ops/copy.h"
#include "ops/generic_kernel.h"
#include "ops/host_copies.h"
#include "ops/saved_recipes.h"
#include "ops/task_ops.h"
#include "privateuse1/host_allocator.h"
#include "privateuse1/storage_resize.h"
#include "privateuse1/tpu_tensor.h"
#include "runtime/event.h"

namespace torch_tpu::ops {
namespace {

using executors::host::TensorSnapshot;

using privateuse1::is_tpu;

bool is_pinned(const at::Tensor& tensor) {
  return tensor.is_cpu() && privateuse1::is_pinned_ptr(tensor.storage().data());
}

void copy_host_to_chip(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  // A pinned source under non_blocking is read when the copy runs (the caller promised not to
  // touch it); anything else is staged now so the caller may reuse its memory immediately.
  const at::Tensor source = non_blocking && is_pinned(src) ? src : src.clone();
  const TensorSnapshot target(dst);
  constexpr const char* kName = "aten::copy_ (host to tpu)";
  launch_task_op(dst.device().index(), kName, [target, source] { target.cpu_view().copy_(source); },
                 {{&dst, true}});
}

void copy_chip_to_host(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  const TensorSnapshot source(src);
  constexpr const char* kName = "aten::copy_ (tpu to host)";
  const bool blocking = !(non_blocking && is_pinned(dst));
  launch_task_op(src.device().index(), kName, [source, dst] { dst.copy_(source.cpu_view()); },
                 {{&src, false}}, blocking);
  if (blocking) engine::sync_current_stream(src.device().index(), "copy_to_host");
}

// Fused mode: a fresh contiguous tensor filled by copying a same-shaped one on its chip holds
// that tensor's clone (reshape copies a transposed tensor so), and autograd may keep a recipe
// for it instead (ops/saved_recipes.h). A tensor already written (version > 0) is not
// fresh: its copy_ was the user's, or it holds other data.
void note_clone_for_recipes(const at::Tensor& src, const at::Tensor& dst) {
  if (!saved_recipes_enabled() || src.device() != dst.device() ||
      src.scalar_type() != dst.scalar_type() || src.sizes() != dst.sizes() || src.is_conj() ||
      src.is_neg() || dst._version() != 0 || !dst.is_contiguous() || dst.storage_offset() != 0 ||
      dst.nbytes() != dst.storage().nbytes()) {
    return;
  }
  static const c10::OperatorHandle clone =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::clone", "");
  note_recomputable_result(
      clone, {src, c10::IValue(static_cast<int64_t>(c10::MemoryFormat::Contiguous))}, dst);
}

void copy_chip_to_chip(const at::Tensor& src, const at::Tensor& dst) {
  const TensorSnapshot source(src);
  const TensorSnapshot target(dst);
  const bool cross_chip = src.device() != dst.device();
  if (cross_chip) {
    // Different chips have different queues: let the source chip finish writing first.
    engine::sync_current_stream(src.device().index(), "cross_chip_copy");
  }
  constexpr const char* kName = "aten::copy_ (tpu to tpu)";
  launch_task_op(dst.device().index(), kName,
                 [source, target] { target.cpu_view().copy_(source.cpu_view()); },
                 {{&src, false}, {&dst, true}});
  note_clone_for_recipes(src, dst);
  if (cross_chip) {
    // The source's block may be freed and reused on its own chip's queue at once: that queue
    // must wait until the copy on the other chip has read it.
    runtime::Event copied;
    engine::record_mark(copied, engine::current_stream(dst.device().index()));
    engine::block_on_event(copied, engine::current_stream(src.device().index()));
  }
}

// Opaque buffers (ops/host_copies.h): a copy between tpu tensors of one chip is the op
// `aten::copy_` of the generic kernel, so the executor runs it from the IR like any op (PJRT:
// a lowering that writes a new buffer for the destination), deferred in fused mode and inside a
// compiled graph's program; host copies carry the rest, a copy between chips included (read
// once the source's chip has written it, then queued on the destination's).
void copy_opaque(const at::Tensor& src, const at::Tensor& dst) {
  if (is_tpu(src) && is_tpu(dst) && src.device() != dst.device()) {
    HostCopies copies;
    write_to_opaque(copies.cpu(src), dst);
  } else if (is_tpu(src) && is_tpu(dst)) {
    static const c10::OperatorHandle copy =
        c10::Dispatcher::singleton().findSchemaOrThrow("aten::copy_", "");
    const std::array<c10::IValue, 3> args{dst, src, false};
    run_generic_kernel(copy, BoxedArgs(args.data(), args.size()));
  } else if (is_tpu(dst)) {
    write_to_opaque(src, dst);
  } else {
    HostCopies copies;
    dst.copy_(copies.cpu(src));
  }
}

}  // namespace

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  const at::Tensor& src = self;
  if (dst.numel() == 0) return dst;
  // ATen's copy_ hands tpu copies to us before its TensorIterator would check memory overlap,
  // and the copy runs later on the chip's queue: check here, at the call, as on CUDA.
  at::assert_no_internal_overlap(dst);
  if (is_tpu(src) && is_tpu(dst)) at::assert_no_partial_overlap(dst, src);
  const c10::DeviceGuard guard(is_tpu(dst) ? dst.device() : src.device());
  TORCH_CHECK(is_tpu(src) || src.is_cpu(), "copy_: cannot copy from ", src.device(), " to ",
              dst.device());
  TORCH_CHECK(is_tpu(dst) || dst.is_cpu(), "copy_: cannot copy from ", src.device(), " to ",
              dst.device());
  if (engine::buffers_are_opaque()) {
    copy_opaque(src, dst);
  } else if (is_tpu(src) && is_tpu(dst)) {
    copy_chip_to_chip(src, dst);
  } else if (is_tpu(dst)) {
    copy_host_to_chip(src, dst, non_blocking);
  } else {
    copy_chip_to_host(src, dst, non_blocking);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (is_tpu(dst)) {
    privateuse1::resize_tensor(dst, self.sizes(), std::nullopt);
  } else {
    dst.resize_(self.sizes());
  }
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  if (engine::buffers_are_opaque()) {
    HostCopies copies;
    return copies.cpu(self).item();
  }
  engine::sync_current_stream(self.device().index(), "item");
  return executors::host::cpu_view_now(self).item();
}

}  // namespace torch_tpu::ops
