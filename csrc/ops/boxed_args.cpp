#include "ops/boxed_args.h"

#include <ATen/EmptyTensor.h>

#include "executors/host/aliasing_views.h"
#include "privateuse1/tpu_tensor.h"

namespace torch_tpu::ops {
namespace {

using privateuse1::is_tpu;

// Calls fn(tensor) for every tensor in an argument, including inside lists.
template <typename Fn>
void for_each_tensor(const c10::IValue& value, Fn&& fn) {
  if (value.isTensor()) {
    fn(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) fn(tensor);
  } else if (value.isOptionalTensorList()) {
    for (const std::optional<at::Tensor> tensor : value.toOptionalTensorList()) {
      if (tensor.has_value()) fn(*tensor);
    }
  }
}

// Returns `value` with fn applied to every defined tensor, keeping the list kinds.
template <typename Fn>
c10::IValue map_tensors(const c10::IValue& value, Fn&& fn) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    return tensor.defined() ? c10::IValue(fn(tensor)) : value;
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> mapped;
    for (const at::Tensor& tensor : value.toTensorList()) mapped.push_back(fn(tensor));
    return mapped;
  }
  if (value.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> mapped;
    for (const std::optional<at::Tensor> tensor : value.toOptionalTensorList()) {
      mapped.push_back(tensor.has_value() && tensor->defined()
                           ? std::optional<at::Tensor>(fn(*tensor))
                           : std::nullopt);
    }
    return mapped;
  }
  return value;
}

// Non-tensor arguments as the CPU kernel needs them: tpu devices -> cpu. (Generators are CPU
// ones already: a random op's stream, taken at issue by the generic kernel.)
c10::IValue cpu_side_value(const c10::IValue& value) {
  if (value.isGenerator()) {
    TORCH_INTERNAL_ASSERT(value.toGenerator().device().is_cpu(),
                          "a tpu generator reached a CPU kernel without its op stream");
  } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
    return c10::Device(c10::kCPU);
  }
  return value;
}

}  // namespace

FlatTensors flatten_tensors(BoxedArgs args) {
  FlatTensors flat;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& arg = args[i];
    if (arg.isTensor()) {
      flat.push_back({c10::MaybeOwned<at::Tensor>::borrowed(arg.toTensor()), i});
    } else if (arg.isTensorList()) {
      for (const at::Tensor& tensor : arg.toTensorList()) {
        flat.push_back({c10::MaybeOwned<at::Tensor>::owned(at::Tensor(tensor)), i});
      }
    } else if (arg.isOptionalTensorList()) {
      for (const std::optional<at::Tensor> tensor : arg.toOptionalTensorList()) {
        flat.push_back({c10::MaybeOwned<at::Tensor>::owned(tensor.value_or(at::Tensor())), i});
      }
    }
  }
  return flat;
}

c10::Device common_tpu_device(const c10::FunctionSchema& schema, BoxedArgs args,
                              bool accepts_cpu_tensors) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> cpu_tensor_device;
  for (const c10::IValue& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      if (!tensor.defined()) return;
      if (is_tpu(tensor)) {
        if (!device.has_value()) {
          device = tensor.device();
        } else {
          TORCH_CHECK(*device == tensor.device(),
                      "Expected all tensors to be on the same device, but found at least two "
                      "devices, ", *device, " and ", tensor.device(), "! (in ", schema.name(), ")");
        }
      } else if (!(tensor.device().is_cpu() && tensor.dim() == 0)) {
        cpu_tensor_device = tensor.device();
      }
    });
    if (arg.isDevice() && arg.toDevice().type() == c10::DeviceType::PrivateUse1 &&
        !device.has_value()) {
      device = arg.toDevice();
    }
  }
  TORCH_CHECK(device.has_value(), schema.name(), ": no tpu tensor or device among the arguments");
  TORCH_CHECK(!cpu_tensor_device.has_value() || accepts_cpu_tensors,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and ", *cpu_tensor_device, "! (in ", schema.name(), ")");
  if (!device->has_index()) device = c10::Device(device->type(), 0);
  return *device;
}

bool all_on_one_tpu_device(BoxedArgs args) {
  std::optional<c10::Device> device;
  bool one_device = true;
  for (const c10::IValue& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      if (arg.isTensor() && tensor.device().is_cpu() && tensor.dim() == 0) return;
      if (!is_tpu(tensor) || (device.has_value() && *device != tensor.device())) {
        one_device = false;
      } else {
        device = tensor.device();
      }
    });
  }
  return one_device && device.has_value();
}

bool has_cpu_data_tensor(BoxedArgs args) {
  bool found = false;
  for (const c10::IValue& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      found = found || (tensor.defined() && tensor.device().is_cpu() && tensor.dim() > 0);
    });
  }
  return found;
}

torch::jit::Stack to_meta_args(BoxedArgs args,
                               std::unordered_map<const c10::TensorImpl*, at::Tensor>& originals) {
  torch::jit::Stack meta;
  meta.reserve(args.size());
  for (const c10::IValue& arg : args) {
    meta.push_back(map_tensors(arg, [&](const at::Tensor& tensor) -> at::Tensor {
      // User-made CPU 0-dim tensors become Meta too: Meta kernels reject a CPU tensor in first
      // place (torch.tensor(2.0) * x), and type promotion only sees dtype and dimension.
      // Wrapped Python numbers stay CPU: Meta kernels read their values.
      const bool cpu_scalar = tensor.device().is_cpu() && tensor.dim() == 0 &&
                              !tensor.unsafeGetTensorImpl()->is_wrapped_number();
      if (!is_tpu(tensor) && !cpu_scalar) return tensor;
      at::Tensor stand_in = at::detail::empty_strided_meta(tensor.sizes(), tensor.strides(),
                                                           tensor.scalar_type());
      if (!cpu_scalar) originals.emplace(stand_in.unsafeGetTensorImpl(), tensor);
      return stand_in;
    }));
  }
  return meta;
}

void capture_args(BoxedArgs args, executors::host::CapturedArgs& captured) {
  captured.args.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& arg = args[i];
    executors::host::CapturedArgs::Arg& slot = captured.args[i];
    slot.first_tensor = static_cast<uint32_t>(captured.tensors.size());
    // By pointer: a copy of a Python-owned tensor makes PyTorch take the GIL to keep its
    // Python object alive (and again to let it go).
    auto add = [&](const at::Tensor* tensor) {
      executors::host::CapturedArgs::Tensor& element = captured.tensors.emplace_back();
      if (tensor != nullptr && is_tpu(*tensor)) {
        element.snapshot = executors::host::TensorSnapshot(*tensor);
      } else if (tensor != nullptr && tensor->defined()) {
        // A wrapped Python number (`x + 1`) was made by the dispatcher for this call and is
        // never visible to the program, so nothing can change it: kept as it is, which also
        // keeps its place in type promotion. Other CPU tensors are the user's: cloned.
        const bool wrapped_number = tensor->unsafeGetTensorImpl()->is_wrapped_number();
        element.host = wrapped_number ? *tensor : tensor->clone();
      }
      ++slot.tensor_count;
    };
    if (arg.isTensor()) {
      slot.kind = executors::host::CapturedArgs::Arg::Kind::kTensor;
      add(&arg.toTensor());
    } else if (arg.isTensorList()) {
      slot.kind = executors::host::CapturedArgs::Arg::Kind::kTensorList;
      for (const at::Tensor& tensor : arg.toTensorList()) add(&tensor);
    } else if (arg.isOptionalTensorList()) {
      slot.kind = executors::host::CapturedArgs::Arg::Kind::kOptionalTensorList;
      for (const std::optional<at::Tensor> tensor : arg.toOptionalTensorList()) {
        add(tensor.has_value() ? &*tensor : nullptr);
      }
    } else {
      slot.value = cpu_side_value(arg);
    }
  }
}

torch::jit::Stack cpu_args_with(
    BoxedArgs args, const std::function<at::Tensor(const at::Tensor&, size_t)>& to_cpu) {
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    c10::IValue mapped = map_tensors(args[i], [&](const at::Tensor& tensor) -> at::Tensor {
      return is_tpu(tensor) ? to_cpu(tensor, i) : tensor;
    });
    stack.push_back(cpu_side_value(mapped));
  }
  return stack;
}

torch::jit::Stack cpu_args_now(BoxedArgs args, std::vector<LiveView>& views) {
  const size_t first_view = views.size();
  torch::jit::Stack stack = cpu_args_with(args, [&](const at::Tensor& tensor, size_t) {
    at::Tensor view = executors::host::cpu_view_now(tensor);
    views.push_back(LiveView{view, tensor, view.const_data_ptr()});
    return view;
  });
  // As for queued ops: a kernel given `out=` over its own input sees the aliasing and raises
  // CPU's error, where views with storages of their own let it write through its input.
  executors::host::share_storage_of_overlapping_views(views, first_view, [](const LiveView& live) { return live.view; });
  return stack;
}

}  // namespace torch_tpu::ops
