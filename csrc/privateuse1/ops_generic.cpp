// The generic tpu kernel: every ATen op without a dedicated tpu kernel lands here (a boxed
// backend fallback). Output shapes come from the op's Meta kernel on the host, outputs are
// allocated on the chip at once, and the op is queued to run through PyTorch's CPU kernel on
// zero-copy views of chip memory (DESIGN §2, executors/host). Ops whose outputs depend on data
// take the counted synchronous fallback instead, which keeps aliasing and in-place semantics
// because the CPU views alias chip memory.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/isfinite.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "engine/launch.h"
#include "engine/metrics.h"
#include "engine/mode.h"
#include "privateuse1/boxed_args.h"
#include "privateuse1/op_plan.h"
#include "privateuse1/storage_resize.h"

namespace torch_tpu::privateuse1 {
namespace {

using TensorMap = std::unordered_map<const c10::TensorImpl*, at::Tensor>;
const c10::DispatchKeySet kCpuKeys(c10::DispatchKey::CPU);

// Runs a boxed op on CPU arguments, below autograd (the tpu op already recorded autograd).
void call_cpu(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  op.redispatchBoxed(kCpuKeys, &stack);
}

at::Tensor new_tpu_tensor(const at::Tensor& meta, c10::Device device) {
  return at::empty_strided(meta.sizes(), meta.strides(),
                           at::TensorOptions().dtype(meta.scalar_type()).device(device));
}

// The argument index whose alias set the return `ret` shares (a view return), or -1.
int aliased_argument(const c10::FunctionSchema& schema, const c10::Argument& ret) {
  if (ret.alias_info() == nullptr) return -1;
  const auto& args = schema.arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].alias_info() != nullptr &&
        args[i].alias_info()->beforeSets() == ret.alias_info()->beforeSets()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// Turns the Meta run's result for one return into the tpu tensor the caller gets.
at::Tensor tpu_result(const at::Tensor& meta, const TensorMap& originals,
                      const at::Tensor* view_base, c10::Device device,
                      std::vector<at::Tensor>& fresh) {
  if (!meta.defined()) return meta;
  if (auto it = originals.find(meta.unsafeGetTensorImpl()); it != originals.end()) {
    // A mutated argument (in-place / out=): take the geometry the Meta kernel gave it.
    const at::Tensor& original = it->second;
    if (original.sizes() != meta.sizes() || original.strides() != meta.strides()) {
      original.unsafeGetTensorImpl()->set_sizes_and_strides(meta.sizes(), meta.strides());
      ensure_storage_fits(original);
    }
    return original;
  }
  if (view_base != nullptr && view_base->defined()) {
    return at::native::as_strided_tensorimpl(*view_base, meta.sizes(), meta.strides(),
                                             view_base->storage_offset() + meta.storage_offset());
  }
  at::Tensor result = new_tpu_tensor(meta, device);
  fresh.push_back(result);
  return result;
}

void check_finite(const std::string& op_name, const std::vector<at::Tensor>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& output = outputs[i];
    if (!output.defined() || !at::isFloatingType(output.scalar_type())) continue;
    const at::Tensor view = executors::host::cpu_view_now(output);
    TORCH_CHECK(at::isfinite(view).all().item<bool>(), "tpu debug check: op '", op_name,
                "' produced NaN or Inf in output ", i);
  }
}

// The synchronous fallback: waits for the chip, runs the CPU kernel on views of chip memory.
void run_sync_fallback(const c10::OperatorHandle& op, const OpPlan& plan, c10::Device device,
                       torch::jit::Stack* stack) {
  engine::count_fallback(plan.name);
  engine::sync_device(device.index(), "cpu_fallback");
  TensorMap views;
  torch::jit::Stack cpu_stack = cpu_args_now(*stack, views);
  engine::translate_errors([&] { call_cpu(op, cpu_stack); });
  stack->clear();
  for (c10::IValue& value : cpu_stack) {
    if (!value.isTensor()) {
      stack->push_back(std::move(value));
      continue;
    }
    const at::Tensor& result = value.toTensor();
    if (auto it = views.find(result.unsafeGetTensorImpl()); it != views.end()) {
      stack->push_back(it->second);  // the op returned one of its (mutated) arguments
      continue;
    }
    // A fresh CPU result: move it onto the chip, in queue order.
    at::Tensor tpu = at::empty_strided(result.sizes(), result.strides(),
                                       result.options().device(device));
    const executors::host::TensorSnapshot target(tpu);
    engine::launch(device.index(), plan.name.c_str(),
                   [target, result] { target.cpu_view().copy_(result); });
    stack->push_back(tpu);
  }
}

void generic_tpu_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet,
                        torch::jit::Stack* stack) {
  OpPlan& plan = plan_of(op);
  const c10::FunctionSchema& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  torch::jit::Stack args(stack->end() - num_args, stack->end());
  const c10::Device device = common_tpu_device(schema, args);
  const c10::DeviceGuard guard(device);

  if (plan.strategy == OpStrategy::kSyncFallback) {
    torch::jit::drop(*stack, num_args);
    stack->insert(stack->end(), args.begin(), args.end());
    run_sync_fallback(op, plan, device, stack);
    return;
  }

  // Shapes, dtypes, strides and argument checks from the Meta kernel, without touching data.
  TensorMap originals;
  torch::jit::Stack meta_stack = to_meta_args(args, originals);
  bool meta_failed = false;
  bool meta_missing = false;
  try {
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta_stack);
  } catch (const c10::NotImplementedError&) {
    meta_missing = true;  // no Meta kernel: this op always needs data
  } catch (const std::exception&) {
    // Either bad input (the CPU kernel will raise the same error, with CPU's message) or a
    // Meta kernel that cannot handle data-dependent shapes (Python ones raise their own types).
    meta_failed = true;
  }
  if (meta_missing || meta_failed) {
    torch::jit::drop(*stack, num_args);
    stack->insert(stack->end(), args.begin(), args.end());
    run_sync_fallback(op, plan, device, stack);
    demote_to_sync_fallback(plan);  // reached only if the CPU kernel accepted the input
    return;
  }

  std::vector<at::Tensor> fresh;  // outputs allocated here (written by the queued op)
  std::vector<at::Tensor> outputs;
  torch::jit::Stack results;
  const auto& returns = schema.returns();
  for (size_t i = 0; i < meta_stack.size(); ++i) {
    const int base = aliased_argument(schema, returns[i]);
    const bool is_view = base >= 0 && !returns[i].alias_info()->isWrite();
    const c10::IValue& meta = meta_stack[i];
    if (meta.isTensor()) {
      const at::Tensor* view_base = is_view ? &args[base].toTensor() : nullptr;
      outputs.push_back(tpu_result(meta.toTensor(), originals, view_base, device, fresh));
      results.push_back(outputs.back());
    } else if (meta.isTensorList()) {
      TORCH_CHECK(!is_view, "not supported on tpu yet: ", plan.name, " (returns a list of views)");
      c10::List<at::Tensor> list;
      for (const at::Tensor& element : meta.toTensorList()) {
        outputs.push_back(tpu_result(element, originals, nullptr, device, fresh));
        list.push_back(outputs.back());
      }
      results.push_back(std::move(list));
    } else {
      results.push_back(meta);  // None
    }
  }

  // Queue the CPU kernel. Functional ops write through their out= overload into the fresh
  // outputs; without one, their results are copied in.
  std::vector<CapturedArg> captured = capture_args(args);
  std::vector<executors::host::TensorSnapshot> targets(fresh.begin(), fresh.end());
  const bool use_out_variant = !plan.mutates_args && plan.out_variant.has_value() &&
                               targets.size() == returns.size();
  const c10::OperatorHandle cpu_op = use_out_variant ? *plan.out_variant : op;
  const bool copy_results = !plan.mutates_args && !use_out_variant && !targets.empty();
  engine::launch(device.index(), plan.name.c_str(),
                 [cpu_op, captured = std::move(captured), targets = std::move(targets),
                  use_out_variant, copy_results] {
                   torch::jit::Stack cpu_stack = cpu_args(captured);
                   if (use_out_variant) {
                     for (const auto& target : targets) cpu_stack.push_back(target.cpu_view());
                   }
                   call_cpu(cpu_op, cpu_stack);
                   if (copy_results) {
                     size_t next = 0;
                     for (const c10::IValue& value : cpu_stack) {
                       if (value.isTensor() && value.toTensor().defined()) {
                         targets[next++].cpu_view().copy_(value.toTensor());
                       } else if (value.isTensorList()) {
                         for (const at::Tensor& tensor : value.toTensorList()) {
                           targets[next++].cpu_view().copy_(tensor);
                         }
                       }
                     }
                   }
                 });
  if (engine::current_mode() == engine::ExecutionMode::kDebug && engine::check_nans_enabled()) {
    check_finite(plan.name, outputs);
  }
  torch::jit::drop(*stack, num_args);
  stack->insert(stack->end(), std::make_move_iterator(results.begin()),
                std::make_move_iterator(results.end()));
}

}  // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&generic_tpu_kernel>());
}

}  // namespace torch_tpu::privateuse1
