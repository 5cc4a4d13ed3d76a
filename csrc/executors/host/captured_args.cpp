#include "executors/host/captured_args.h"

#include "executors/host/aliasing_views.h"

namespace torch_tpu::executors::host {
namespace {

at::Tensor rebuild(const CapturedArgs::Tensor& element, size_t index,
                   std::vector<KernelView>& views,
                   const std::function<at::Tensor(size_t)>* view_of) {
  if (!element.snapshot.defined()) return element.host;
  if (view_of != nullptr) return (*view_of)(index);
  at::Tensor view = element.snapshot.cpu_view();
  views.emplace_back(&element.snapshot, view);
  return view;
}

}  // namespace

torch::jit::Stack cpu_args(const CapturedArgs& captured, std::vector<KernelView>& views,
                           const std::function<at::Tensor(size_t)>* view_of) {
  const auto rebuild_at = [&](size_t index) {
    return rebuild(captured.tensors[index], index, views, view_of);
  };
  torch::jit::Stack stack;
  stack.reserve(captured.args.size());
  const size_t first_view = views.size();
  views.reserve(first_view + captured.tensors.size());
  for (const CapturedArgs::Arg& slot : captured.args) {
    switch (slot.kind) {
      case CapturedArgs::Arg::Kind::kValue:
        stack.push_back(slot.value);
        break;
      case CapturedArgs::Arg::Kind::kTensor:
        stack.push_back(rebuild_at(slot.first_tensor));
        break;
      case CapturedArgs::Arg::Kind::kTensorList: {
        c10::List<at::Tensor> list;
        list.reserve(slot.tensor_count);
        for (uint32_t i = 0; i < slot.tensor_count; ++i) list.push_back(rebuild_at(slot.first_tensor + i));
        stack.push_back(std::move(list));
        break;
      }
      case CapturedArgs::Arg::Kind::kOptionalTensorList: {
        c10::List<std::optional<at::Tensor>> list;
        for (uint32_t i = 0; i < slot.tensor_count; ++i) {
          at::Tensor tensor = rebuild_at(slot.first_tensor + i);
          list.push_back(tensor.defined() ? std::optional<at::Tensor>(std::move(tensor))
                                          : std::nullopt);
        }
        stack.push_back(std::move(list));
        break;
      }
    }
  }
  share_storage_of_overlapping_views(views, first_view, [](const KernelView& view) { return view.second; });
  return stack;
}

}  // namespace torch_tpu::executors::host
