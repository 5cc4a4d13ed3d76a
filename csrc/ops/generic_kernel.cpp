// The generic tpu kernel: every ATen op without a dedicated tpu kernel lands here (a boxed
// backend fallback; registered explicitly for ops with composite kernels, and behind unboxed
// entry points for the hottest ones: prefer_cpu_kernels.cpp, unboxed.cpp). Output shapes come from the op's Meta kernel on the host, outputs are
// allocated on the chip at once, and the op is queued to run through PyTorch's CPU kernel on
// zero-copy views of chip memory (DESIGN §2, executors/host). Ops whose outputs depend on data
// take the counted synchronous fallback instead, which keeps aliasing and in-place semantics
// because the CPU views alias chip memory.
#include <algorithm>
#include <cstdint>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/ones.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "engine/active_executor.h"
#include "engine/launch.h"
#include "engine/metrics.h"
#include "engine/mode.h"
#include "engine/program.h"
#include "executors/host/cpu_kernel_call.h"
#include "ops/boxed_args.h"
#include "ops/cpu_output_rules.h"
#include "ops/generic_kernel.h"
#include "ops/host_copies.h"
#include "ops/ir_recording.h"
#include "ops/op_description.h"
#include "ops/op_plan.h"
#include "ops/out_variants.h"
#include "ops/saved_recipes.h"
#include "ops/shape_cache.h"
#include "ops/task_ops.h"
#include "privateuse1/generator.h"
#include "privateuse1/storage_resize.h"
#include "privateuse1/tpu_tensor.h"

namespace torch_tpu::ops {
namespace {

using TensorMap = std::unordered_map<const c10::TensorImpl*, at::Tensor>;

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

TensorSpec spec_of(const at::Tensor& meta, const TensorMap& originals,
                   const FlatTensors& flat_args, int view_base) {
  TensorSpec spec;
  if (!meta.defined()) return spec;
  spec.sizes.assign(meta.sizes().begin(), meta.sizes().end());
  spec.strides.assign(meta.strides().begin(), meta.strides().end());
  spec.dtype = meta.scalar_type();
  if (auto it = originals.find(meta.unsafeGetTensorImpl()); it != originals.end()) {
    spec.kind = TensorSpec::Kind::kMutatedArgument;
    for (size_t i = 0; i < flat_args.size(); ++i) {
      if (flat_args[i].tensor->is_same(it->second)) spec.position = static_cast<int>(i);
    }
    return spec;
  }
  if (view_base >= 0) {
    spec.kind = TensorSpec::Kind::kViewOfArgument;
    spec.position = view_base;
    spec.storage_offset = meta.storage_offset();
    return spec;
  }
  spec.kind = TensorSpec::Kind::kFresh;
  return spec;
}

// What the Meta kernel's results say to build, per return.
OutputSpecs specs_from_meta(const c10::FunctionSchema& schema, const torch::jit::Stack& meta_stack,
                            const TensorMap& originals, BoxedArgs args) {
  const FlatTensors flat_args = flatten_tensors(args);
  OutputSpecs specs(meta_stack.size());
  for (size_t i = 0; i < meta_stack.size(); ++i) {
    const c10::Argument& ret = schema.returns()[i];
    const int base = aliased_argument(schema, ret);
    const int view_base = base >= 0 && !ret.alias_info()->isWrite() ? base : -1;
    const c10::IValue& meta = meta_stack[i];
    if (meta.isTensor()) {
      specs[i].kind = ReturnSpec::Kind::kTensor;
      specs[i].tensors.push_back(spec_of(meta.toTensor(), originals, flat_args, view_base));
    } else if (meta.isTensorList()) {
      TORCH_CHECK(view_base < 0, "not supported on tpu yet: ", schema.name(),
                  " (returns a list of views)");
      specs[i].kind = ReturnSpec::Kind::kTensorList;
      for (const at::Tensor& element : meta.toTensorList()) {
        specs[i].tensors.push_back(spec_of(element, originals, flat_args, -1));
      }
    }
  }
  return specs;
}

// Builds the tpu tensor a TensorSpec describes; fresh ones are also appended to `fresh`.
at::Tensor realize(const TensorSpec& spec, BoxedArgs args,
                   const FlatTensors& flat_args, c10::Device device,
                   std::vector<at::Tensor>& fresh) {
  switch (spec.kind) {
    case TensorSpec::Kind::kUndefined:
      return at::Tensor();
    case TensorSpec::Kind::kMutatedArgument: {
      const at::Tensor& original = *flat_args.at(spec.position).tensor;
      if (original.sizes() != c10::IntArrayRef(spec.sizes) ||
          original.strides() != c10::IntArrayRef(spec.strides)) {
        original.unsafeGetTensorImpl()->set_sizes_and_strides(spec.sizes, spec.strides);
        privateuse1::ensure_storage_fits(original);
      }
      return original;
    }
    case TensorSpec::Kind::kViewOfArgument: {
      const at::Tensor& base = args.at(spec.position).toTensor();
      return at::native::as_strided_tensorimpl(base, spec.sizes, spec.strides,
                                               base.storage_offset() + spec.storage_offset);
    }
    case TensorSpec::Kind::kFresh:
      break;
  }
  at::Tensor result = at::empty_strided(spec.sizes, spec.strides,
                                        at::TensorOptions().dtype(spec.dtype).device(device));
  fresh.push_back(result);
  return result;
}

void check_finite(const std::string& op_name, const std::vector<at::Tensor>& outputs) {
  HostCopies copies;  // opaque buffers only
  for (size_t i = 0; i < outputs.size(); ++i) {
    const at::Tensor& output = outputs[i];
    if (!output.defined() || !at::isFloatingType(output.scalar_type())) continue;
    const at::Tensor view = engine::buffers_are_opaque() ? copies.cpu(output)
                                                         : executors::host::cpu_view_now(output);
    TORCH_CHECK(at::isfinite(view).all().item<bool>(), "tpu debug check: op '", op_name,
                "' produced NaN or Inf in output ", i);
  }
}

// Brings a tpu argument up to date after a CPU kernel resized its view (out= arguments of
// data-dependent ops): new geometry on the tpu tensor, and moved contents copied back.
void write_back_live_view(const LiveView& live, const OpPlan& plan, c10::Device device) {
  const bool moved = executors::host::moved_off_chip(live.view, live.host_data);
  if (!moved && live.view.strides() != live.tpu.strides()) {
    // Restrided in place (same memory, as a CPU kernel restrides its out= tensor): take the
    // new geometry, as the CPU tensor did.
    live.tpu.unsafeGetTensorImpl()->set_sizes_and_strides(live.view.sizes(), live.view.strides());
    return;
  }
  if (live.view.sizes() != live.tpu.sizes()) privateuse1::resize_tensor(live.tpu, live.view.sizes(), std::nullopt);
  if (!moved) return;
  const executors::host::TensorSnapshot target(live.tpu);
  launch_task_op(device.index(), plan.name.c_str(),
                 [target, source = live.view] { target.cpu_view().copy_(source); },
                 {{&live.tpu, true}});
}

// Appends a CPU kernel's results to `results`, each tensor as `on_chip` makes it a tpu tensor.
template <typename OnChip>
void append_results_on_chip(torch::jit::Stack& cpu_stack, const OnChip& on_chip,
                            torch::jit::Stack& results) {
  for (c10::IValue& value : cpu_stack) {
    if (value.isTensor()) {
      results.push_back(on_chip(value.toTensor()));
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> list;
      for (const at::Tensor& element : value.toTensorList()) list.push_back(on_chip(element));
      results.push_back(std::move(list));
    } else {
      results.push_back(std::move(value));
    }
  }
}

// The synchronous fallback on opaque buffers (ops/host_copies.h): the CPU kernel runs on host
// copies of its tpu arguments' storages (views of one storage share one copy), and the
// storages it writes are uploaded again. Appends the op's results to `results`.
void run_fallback_on_host_copies(const c10::OperatorHandle& op, const OpPlan& plan,
                                 c10::Device device, BoxedArgs args, torch::jit::Stack& results) {
  struct Mapped {
    at::Tensor tpu;
    at::Tensor cpu;
    bool written;
  };
  HostCopies copies;
  std::vector<Mapped> mapped;
  torch::jit::Stack cpu_stack = cpu_args_with(args, [&](const at::Tensor& tensor, size_t index) {
    at::Tensor cpu = copies.cpu(tensor);
    mapped.push_back({tensor, cpu, plan.written_args[index]});
    return cpu;
  });
  engine::translate_errors([&] { executors::host::call_cpu(op, cpu_stack); });
  for (const Mapped& m : mapped) {
    if (m.written) copies.note_written(m.tpu, m.cpu);
  }
  copies.upload_written();
  // Each CPU result as the tpu tensor to return: one of the op's arguments, a view of one of
  // their storages, or a fresh result uploaded to the chip.
  const auto on_chip = [&](const at::Tensor& result) -> at::Tensor {
    if (!result.defined()) return result;
    for (const Mapped& m : mapped) {
      if (m.cpu.unsafeGetTensorImpl() == result.unsafeGetTensorImpl()) return m.tpu;
    }
    if (std::optional<c10::Storage> storage = copies.tpu_storage_of(result)) {
      at::Tensor view = at::empty({0}, result.options().device(device));
      view.set_(*storage, result.storage_offset(), result.sizes(), result.strides());
      return view;
    }
    at::Tensor tpu = at::empty_strided(result.sizes(), result.strides(),
                                       result.options().device(device));
    write_to_opaque(result, tpu);
    return tpu;
  };
  append_results_on_chip(cpu_stack, on_chip, results);
}

// The synchronous fallback: waits for the chip, runs the CPU kernel on views of chip memory.
// Appends the op's results to `results`.
void run_sync_fallback(const c10::OperatorHandle& op, const OpPlan& plan, c10::Device device,
                       BoxedArgs args, torch::jit::Stack& results) {
  engine::count_fallback(plan.name);
  if (engine::buffers_are_opaque()) {
    run_fallback_on_host_copies(op, plan, device, args, results);
    return;
  }
  engine::sync_device(device.index(), "cpu_fallback");
  std::vector<LiveView> views;
  torch::jit::Stack cpu_stack = cpu_args_now(args, views);
  engine::translate_errors([&] { executors::host::call_cpu(op, cpu_stack); });
  for (const LiveView& live : views) write_back_live_view(live, plan, device);
  // Each CPU result as the tpu tensor to return: one of the op's arguments, or a fresh CPU
  // result moved onto the chip in queue order.
  const auto on_chip = [&](const at::Tensor& result) -> at::Tensor {
    if (!result.defined()) return result;
    const auto returned_argument =
        std::find_if(views.begin(), views.end(), [&](const LiveView& live) {
          return live.view.unsafeGetTensorImpl() == result.unsafeGetTensorImpl();
        });
    if (returned_argument != views.end()) return returned_argument->tpu;
    TORCH_CHECK_NOT_IMPLEMENTED(!result.is_quantized(), "not supported on tpu yet: dtype ",
                                result.scalar_type(), " (quantized, in ", plan.name, ")");
    at::Tensor tpu = at::empty_strided(result.sizes(), result.strides(),
                                       result.options().device(device));
    const executors::host::TensorSnapshot target(tpu);
    launch_task_op(device.index(), plan.name.c_str(),
                   [target, result] { target.cpu_view().copy_(result); }, {{&tpu, true}});
    return tpu;
  };
  append_results_on_chip(cpu_stack, on_chip, results);
}

// True for ops that only update arguments in place (add_, _fused_adam_): no out= arguments,
// and every return is one of the mutated arguments.
bool is_in_place_only(const c10::FunctionSchema& schema) {
  if (!schema.is_mutable()) return false;
  for (const auto& arg : schema.arguments()) {
    if (arg.kwarg_only() && arg.alias_info() != nullptr && arg.alias_info()->isWrite()) return false;
  }
  for (const auto& ret : schema.returns()) {
    if (ret.alias_info() == nullptr || !ret.alias_info()->isWrite() ||
        ret.type()->kind() != c10::TypeKind::TensorType) {
      return false;
    }
  }
  return true;
}

// Output specs of an in-place-only op read off its schema: each return is its argument,
// unchanged in shape (in-place ops never resize).
std::optional<OutputSpecs> specs_from_schema(const c10::FunctionSchema& schema,
                                             BoxedArgs args) {
  OutputSpecs specs;
  for (const auto& ret : schema.returns()) {
    const int index = aliased_argument(schema, ret);
    if (index < 0 || !args[index].isTensor()) return std::nullopt;
    torch::jit::Stack leading(args.begin(), args.begin() + index);
    const at::Tensor& tensor = args[index].toTensor();
    TensorSpec spec;
    spec.kind = TensorSpec::Kind::kMutatedArgument;
    spec.position = static_cast<int>(flatten_tensors(leading).size());
    spec.sizes.assign(tensor.sizes().begin(), tensor.sizes().end());
    spec.strides.assign(tensor.strides().begin(), tensor.strides().end());
    spec.dtype = tensor.scalar_type();
    specs.push_back(ReturnSpec{ReturnSpec::Kind::kTensor, {spec}});
  }
  return specs;
}

// Runs the op's Meta kernel on stand-ins of `args`. Calls it cannot shape (a Meta kernel that
// is missing or needs data) get the kSyncFallback marker; in-place-only ops without a Meta
// kernel get their specs from the schema. Bad input raises here (from the CPU kernel if the
// Meta kernel's error was not a usable one).
OutputSpecs infer_output_specs(const c10::OperatorHandle& op, const OpPlan& plan, BoxedArgs args) {
  const c10::FunctionSchema& schema = op.schema();
  TensorMap originals;
  torch::jit::Stack meta_stack = to_meta_args(args, originals);
  bool meta_missing = false;
  try {
    const c10::DispatchKeySet meta(c10::DispatchKey::Meta);
    if (plan.shape_function.has_value()) {
      plan.shape_function->callBoxed(op, meta, &meta_stack);
    } else {
      op.redispatchBoxed(meta, &meta_stack);
    }
    OutputSpecs specs = specs_from_meta(schema, meta_stack, originals, args);
    apply_cpu_output_rules(schema.name(), args, specs);
    return specs;
  } catch (const c10::NotImplementedError&) {
    meta_missing = true;
  } catch (const std::exception&) {
    // A Meta kernel that needs data (Python ones raise their own types) or bad input; the
    // synchronous fallback's CPU kernel raises the right error for the latter.
  }
  if (meta_missing && is_in_place_only(schema)) {
    if (auto specs = specs_from_schema(schema, args)) return *specs;
  }
  return {ReturnSpec{ReturnSpec::Kind::kSyncFallback, {}}};
}

// How many numbers a random op draws, for its generator's offset: its largest tensor's
// elements (the tensor it fills, or its input: dropout, bernoulli), at least one.
uint64_t random_draws(const torch::jit::Stack& args) {
  int64_t draws = 1;
  const auto count = [&](const c10::IValue& value) {
    if (value.isTensor() && value.toTensor().defined()) draws = std::max(draws, value.toTensor().numel());
  };
  for (const c10::IValue& value : args) {
    if (value.isTensorList()) {
      for (const c10::IValue& item : value.toListRef()) count(item);
    } else {
      count(value);
    }
  }
  return static_cast<uint64_t>(draws);
}

// A random op's generators, taken at issue (privateuse1/generator.h): the one given, or the
// chip's default (not the CPU kernel's default, the CPU generator, so tpu seeds and RNG state
// mean what they say), each replaced by the CPU generator that this op's kernel draws from.
void take_op_streams(const OpPlan& plan, c10::Device device, torch::jit::Stack& args) {
  for (const size_t i : plan.generator_args) {
    if (args[i].isNone()) {
      args[i] = privateuse1::default_generator(device.index());
    } else {
      const c10::Device generator_device = args[i].toGenerator().device();
      TORCH_CHECK(generator_device.type() == c10::DeviceType::PrivateUse1,
                  "Expected a 'tpu' device type for generator but found '",
                  generator_device.type(), "'");
    }
  }
  const uint64_t draws = random_draws(args);
  for (const size_t i : plan.generator_args) {
    args[i] = privateuse1::op_stream_for(args[i].toGenerator(), draws);
  }
}

// Fused mode notes what autograd may keep as a recipe instead of the buffer
// (ops/saved_recipes.h): the result of a functional pointwise call (add.Tensor, or an out=
// call that writes only its one out= argument), the value an in-place pointwise call writes
// over a noted result (relu_ after a batch norm), a normalization's first output, an RNN
// cell's workspace.
void note_if_recomputable(const c10::OperatorHandle& op, const OpPlan& plan,
                          BoxedArgs args, const std::vector<at::Tensor>& outputs,
                          const std::vector<at::Tensor>& fresh) {
  if (plan.recomputable_output.has_value()) {
    if (fresh.size() == outputs.size()) note_recomputable_output(op, args, outputs);
    return;
  }
  if (!plan.pointwise || outputs.size() != 1) return;
  if (!plan.mutates_args) {
    if (fresh.size() == 1) note_recomputable_result(op, args, outputs.front());
    return;
  }
  if (plan.functional_of_inplace.has_value()) {
    note_recomputable_update(*plan.functional_of_inplace, args, args[0].toTensor());
    return;
  }
  const size_t n = args.size();
  if (n < 2 || !plan.out_args[n - 1]) return;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (plan.written_args[i]) return;
  }
  const std::optional<c10::OperatorHandle> functional = functional_variant_of(op);
  if (!functional.has_value()) return;
  note_recomputable_result(*functional, args.slice(0, n - 1), args.back().toTensor());
}

// ATen's elementwise kernels refuse, on the host, to write a tensor whose elements share
// memory (an expanded view) or one that partly overlaps an input (TensorIterator's checks), so
// CUDA raises at the call. Their Meta kernels skip the checks, and the kernel runs on the chip's
// queue: the error would come only at a sync point. So they run here. Other ops differ per
// kernel in what they check (sum(out=) allows a partial overlap, cumsum(out=) does not): their
// kernels check when they run, over CPU views that share a storage where the arguments overlap
// (executors/host/aliasing_views.h), and the error comes at the next sync point.
void check_written_memory(const OpPlan& plan, BoxedArgs args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!plan.written_args[i] || !args[i].isTensor()) continue;
    const at::Tensor& written = args[i].toTensor();
    if (!plan.may_write_overlapping_elements) at::assert_no_internal_overlap(written);
    for (size_t j = 0; j < args.size(); ++j) {
      if (j != i && !plan.out_args[j] && args[j].isTensor()) {
        at::assert_no_partial_overlap(written, args[j].toTensor());
      }
    }
  }
}

// ATen's elementwise kernels also check dtypes on the host: an in-place or out= result must be
// able to hold the computed type ("result type Float can't be cast to the desired output type
// Long"). Their Meta kernels do not. Dtypes are part of the call signature, so once per new
// signature the CPU kernel runs on one-element CPU stand-ins of the tpu arguments (ones: no
// division by zero; an out= argument empty, as a functional op's own output starts, so that
// resizing it warns about nothing), and such a call raises here with ATen's own message, as on
// CUDA.
void check_dtypes_on_cpu_stand_ins(const c10::OperatorHandle& op, const OpPlan& plan,
                                   BoxedArgs args) {
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& arg = args[i];
    if (!arg.isTensor() || !privateuse1::is_tpu(arg.toTensor())) {
      stack.push_back(arg);
      continue;
    }
    const at::Tensor& tensor = arg.toTensor();
    const at::TensorOptions options = tensor.options().device(c10::kCPU);
    stack.emplace_back(plan.out_args[i] ? at::empty({0}, options)
                                        : at::ones(std::vector<int64_t>(tensor.dim(), 1), options));
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), &stack);
}

// The task of an op deferred for a compiled program: its program runs it, never the task.
void compiled_with_its_program() {
  throw std::logic_error("an op recorded for a compiled program ran as a task of its own");
}

// A call asking for a quantized dtype (quantize_per_tensor's `dtype`) is refused at the call,
// naming the dtype and the op: tpu tensors cannot hold one yet, and a Meta kernel may not say
// so (quantize_per_tensor's returns float32).
void refuse_quantized_dtypes(const OpPlan& plan, BoxedArgs args) {
  for (const size_t i : plan.dtype_args) {
    if (i >= args.size() || !args[i].isInt()) continue;
    const auto dtype = static_cast<c10::ScalarType>(args[i].toInt());
    TORCH_CHECK_NOT_IMPLEMENTED(!c10::isQIntType(dtype), "not supported on tpu yet: dtype ", dtype,
                                " (quantized, in ", plan.name, ")");
  }
}

}  // namespace

torch::jit::Stack run_generic_kernel(const c10::OperatorHandle& op, BoxedArgs args) {
  OpPlan& plan = plan_of(op);
  refuse_quantized_dtypes(plan, args);
  const c10::FunctionSchema& schema = op.schema();
  const c10::Device device = common_tpu_device(schema, args, plan.accepts_cpu_tensors);
  const c10::DeviceGuard guard(device);
  torch::jit::Stack with_generators;  // random ops only: their arguments, with op streams
  if (!plan.generator_args.empty()) {
    with_generators = args.vec();
    take_op_streams(plan, device, with_generators);
    args = with_generators;
  }
  torch::jit::Stack results;

  if (plan.strategy == OpStrategy::kSyncFallback) {
    run_sync_fallback(op, plan, device, args, results);
    return results;
  }

  if (plan.pointwise && plan.mutates_args) check_written_memory(plan, args);

  // Output shapes, dtypes and strides: from the cache, or from the Meta kernel (which also
  // checks the arguments) without touching data.
  CallSignature signature = call_signature(plan, args);
  const bool fused = engine::current_policy().defers_ops();
  // Meta kernels read CPU index tensors, so such calls are not keyed by structure alone.
  const bool cacheable = !(plan.accepts_cpu_tensors && has_cpu_data_tensor(args));
  SharedCachedCall cached = cacheable ? lookup_call(signature) : nullptr;
  const auto needs_data = [](const OutputSpecs& found) {
    return found.size() == 1 && found.front().kind == ReturnSpec::Kind::kSyncFallback;
  };
  if (cached == nullptr) {
    cached = std::make_shared<const CachedCall>(infer_output_specs(op, plan, args));
    if (needs_data(cached->outputs)) {
      run_sync_fallback(op, plan, device, args, results);
      // Cached only now: had the CPU kernel rejected the input, this structure may still be
      // fine with other scalar values.
      if (cacheable) store_call(std::move(signature), cached);
      return results;
    }
    // Shapes passed (Meta); dtypes next, before the signature is cached, so that a failing
    // call fails again next time.
    if (plan.pointwise && plan.mutates_args) check_dtypes_on_cpu_stand_ins(op, plan, args);
    if (cacheable) store_call(std::move(signature), cached);
  } else if (needs_data(cached->outputs)) {
    run_sync_fallback(op, plan, device, args, results);
    return results;
  }
  const bool opaque = engine::buffers_are_opaque();
  if (opaque && cached->runs_on_host()) {
    run_sync_fallback(op, plan, device, args, results);
    return results;
  }
  const OutputSpecs& specs = cached->outputs;

  std::vector<at::Tensor> fresh;  // outputs allocated here (written by the queued op)
  std::vector<at::Tensor> outputs;
  c10::SmallVector<bool, 4> fresh_returns;
  const FlatTensors flat_args = flatten_tensors(args);
  const auto realize_return = [&](const TensorSpec& spec) {
    fresh_returns.push_back(spec.kind == TensorSpec::Kind::kFresh);
    outputs.push_back(realize(spec, args, flat_args, device, fresh));
    return outputs.back();
  };
  for (const ReturnSpec& ret : specs) {
    if (ret.kind == ReturnSpec::Kind::kTensor) {
      results.push_back(realize_return(ret.tensors[0]));
    } else if (ret.kind == ReturnSpec::Kind::kTensorList) {
      c10::List<at::Tensor> list;
      for (const TensorSpec& element : ret.tensors) list.push_back(realize_return(element));
      results.push_back(std::move(list));
    } else {
      results.push_back(c10::IValue());
    }
  }
  // Queue the CPU kernel. Functional ops write through their out= overload into the fresh
  // outputs; otherwise the kernel's fresh results are copied in (ops that update arguments in
  // place may return fresh tensors too: batch norm's saved statistics). The queued op is built
  // once, in place: it is ~0.7 KB of small vectors, and moving it through a temporary, a
  // lambda and a std::function cost the host more than capturing it.
  const bool use_out_variant = !plan.mutates_args && plan.out_variant.has_value() &&
                               fresh.size() == schema.returns().size();
  auto queued = std::make_shared<executors::host::CpuKernelCall>(use_out_variant ? *plan.out_variant : op);
  capture_args(args, queued->captured);
  queued->targets.assign(fresh.begin(), fresh.end());
  queued->fresh_returns = std::move(fresh_returns);
  queued->use_out_variant = use_out_variant;
  if (fused && opaque) {
    // Fused mode on opaque buffers: the node joins the program the executor compiles at the
    // flush (engine/compiled_programs.h), once the executor said it can express the op.
    auto description = describe_op(plan, args, outputs, fresh, queued);
    record_node(schema, plan, args, results, fresh, *description);
    if (!cached->expressible()) {
      std::string refusal = engine::check_expressible_alone(plan.name.c_str(), description);
      if (!refusal.empty()) {
        cached->mark_runs_on_host();
        engine::note_fallback_reason(plan.name, refusal);
        results.clear();
        run_sync_fallback(op, plan, device, args, results);
        return results;
      }
      cached->mark_expressible();
    }
    if (saved_recipes_enabled()) note_if_recomputable(op, plan, args, outputs, fresh);
    engine::launch_described(device.index(), plan.name.c_str(), compiled_with_its_program,
                             std::move(description));
  } else if (fused) {
    auto description = describe_op(plan, args, outputs, fresh, queued);
    record_node(schema, plan, args, results, fresh, *description);
    if (saved_recipes_enabled()) note_if_recomputable(op, plan, args, outputs, fresh);
    engine::launch_described(device.index(), plan.name.c_str(),
                             [queued = std::move(queued)] { executors::host::run_kernel_call(*queued); },
                             std::move(description));
  } else if (opaque) {
    // Strict and Debug on opaque buffers: a one-node program compiled from the op's IR node,
    // or, for an op the executor cannot express, the fallback through host copies.
    auto description = describe_op(plan, args, outputs, fresh, queued);
    record_node(schema, plan, args, results, fresh, *description);
    engine::BoundOneNode bound =
        engine::compile_and_bind_one_node(plan.name.c_str(), std::move(description));
    if (bound.executable == nullptr) {
      cached->mark_runs_on_host();
      engine::note_fallback_reason(plan.name, bound.not_supported);
      results.clear();
      run_sync_fallback(op, plan, device, args, results);
      return results;
    }
    engine::launch_one_node(device.index(), std::move(bound.executable), std::move(bound.bindings));
  } else {
    // Strict and Debug: the op runs as a one-node program, compiled once per call structure.
    std::shared_ptr<const executors::Executable> executable = cached->one_node();
    if (executable == nullptr) {
      auto description = describe_op(plan, args, outputs, fresh, queued);
      record_node(schema, plan, args, results, fresh, *description);
      executable =
          cached->keep_one_node(engine::compile_one_node(plan.name.c_str(), std::move(description)));
    }
    executors::RunBindings bindings;
    bindings.recorded.push_back(std::move(queued));
    engine::launch_one_node(device.index(), std::move(executable), std::move(bindings));
  }
  if (engine::current_policy().checks_nans_when_enabled() && engine::check_nans_enabled()) {
    check_finite(plan.name, outputs);
  }
  return results;
}

void generic_tpu_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet,
                        torch::jit::Stack* stack) {
  const size_t num_args = op.schema().arguments().size();
  torch::jit::Stack results =
      run_generic_kernel(op, BoxedArgs(stack->data() + stack->size() - num_args, num_args));
  torch::jit::drop(*stack, num_args);
  stack->insert(stack->end(), std::make_move_iterator(results.begin()),
                std::make_move_iterator(results.end()));
}

}  // namespace torch_tpu::ops
