#include "distributed/transport_views.h"

#include <ATen/ops/empty.h>

#include "engine/active_executor.h"

namespace torch_tpu::distributed {
namespace {

using executors::host::TensorSnapshot;

std::vector<TensorSnapshot> snapshots_of(const std::vector<at::Tensor>& tensors) {
  std::vector<TensorSnapshot> snapshots;
  snapshots.reserve(tensors.size());
  for (const at::Tensor& tensor : tensors) snapshots.emplace_back(tensor);
  return snapshots;
}

std::vector<at::Tensor> views_of(const std::vector<TensorSnapshot>& snapshots) {
  std::vector<at::Tensor> views;
  views.reserve(snapshots.size());
  for (const TensorSnapshot& snapshot : snapshots) views.push_back(snapshot.cpu_view());
  return views;
}

}  // namespace

TransportViews::TransportViews(const std::vector<at::Tensor>& read,
                               const std::vector<at::Tensor>& written)
    : opaque_(engine::buffers_are_opaque()) {
  if (!opaque_) {
    read_snapshots_ = snapshots_of(read);
    written_snapshots_ = snapshots_of(written);
    return;
  }
  auto place = [](const std::vector<at::Tensor>& tensors) {
    std::vector<Placement> placements;
    for (const at::Tensor& tensor : tensors) {
      placements.push_back({reinterpret_cast<runtime::DeviceAddress>(tensor.storage().data()),
                            tensor.storage().nbytes(), tensor.storage_offset(),
                            tensor.sizes().vec(), tensor.strides().vec(), tensor.scalar_type()});
    }
    return placements;
  };
  read_placements_ = place(read);
  written_placements_ = place(written);
}

at::Tensor TransportViews::view_of(const Placement& placement, bool written) {
  Staged* staged = nullptr;
  for (Staged& candidate : staged_) {
    if (candidate.storage == placement.storage) staged = &candidate;
  }
  if (staged == nullptr) {
    at::Tensor bytes = at::empty({static_cast<int64_t>(placement.storage_bytes)}, at::kByte);
    if (placement.storage_bytes > 0) {
      engine::active_executor().read_now(placement.storage, bytes.data_ptr(), placement.storage_bytes);
    }
    staged = &staged_.emplace_back(Staged{placement.storage, std::move(bytes), false});
  }
  staged->written = staged->written || written;
  at::Tensor view = at::empty({0}, at::TensorOptions().dtype(placement.dtype));
  view.set_(staged->bytes.storage(), placement.storage_offset, placement.sizes, placement.strides);
  return view;
}

void TransportViews::open() {
  if (!opaque_) {
    read_views_ = views_of(read_snapshots_);
    written_views_ = views_of(written_snapshots_);
    return;
  }
  for (const Placement& placement : read_placements_) read_views_.push_back(view_of(placement, false));
  for (const Placement& placement : written_placements_) {
    written_views_.push_back(view_of(placement, true));
  }
}

void TransportViews::close() {
  for (const Staged& staged : staged_) {
    if (!staged.written || staged.bytes.numel() == 0) continue;
    engine::active_executor().write_now(staged.bytes.data_ptr(), staged.storage,
                                        static_cast<size_t>(staged.bytes.numel()));
  }
}

}  // namespace torch_tpu::distributed
