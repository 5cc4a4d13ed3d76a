#include "executors/host/aliasing_views.h"

#include <algorithm>
#include <vector>

#include <ATen/EmptyTensor.h>
#include <c10/util/SmallVector.h>

namespace torch_tpu::executors::host {
namespace {

struct Extent {
  const char* begin;
  const char* end;
  const at::Tensor* view;
};

// Gives the views of `group` (overlapping, sorted by begin) one storage over [begin, end),
// unless one of them does not start a whole number of its elements past the first.
void share(c10::ArrayRef<Extent> group, const char* begin, const char* end) {
  for (const Extent& extent : group) {
    if ((extent.begin - begin) % static_cast<int64_t>(extent.view->element_size()) != 0) return;
  }
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(end - begin),
                       c10::DataPtr(const_cast<char*>(begin), c10::Device(c10::kCPU)),
                       /*allocator=*/nullptr, /*resizable=*/false);
  for (const Extent& extent : group) {
    c10::TensorImpl* impl = extent.view->unsafeGetTensorImpl();
    const c10::SmallVector<int64_t, 8> sizes(impl->sizes().begin(), impl->sizes().end());
    const c10::SmallVector<int64_t, 8> strides(impl->strides().begin(), impl->strides().end());
    impl->set_storage_keep_dtype(storage);
    impl->set_sizes_and_strides(sizes, strides,
                                (extent.begin - begin) / static_cast<int64_t>(impl->itemsize()));
  }
}

}  // namespace

void share_storage_of_overlapping_views(c10::ArrayRef<at::Tensor> views) {
  if (views.size() < 2) return;
  std::vector<Extent> extents;
  extents.reserve(views.size());
  for (const at::Tensor& view : views) {
    if (!view.defined() || view.numel() == 0) continue;
    const auto* begin = static_cast<const char*>(view.const_data_ptr());
    const size_t bytes =
        at::detail::computeStorageNbytes(view.sizes(), view.strides(), view.element_size());
    extents.push_back(Extent{begin, begin + bytes, &view});
  }
  std::sort(extents.begin(), extents.end(),
            [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (size_t first = 0; first < extents.size();) {
    const char* end = extents[first].end;
    size_t next = first + 1;
    while (next < extents.size() && extents[next].begin < end) {
      end = std::max(end, extents[next].end);
      ++next;
    }
    if (next - first >= 2) {
      share(c10::ArrayRef<Extent>(extents.data() + first, next - first), extents[first].begin, end);
    }
    first = next;
  }
}

}  // namespace torch_tpu::executors::host
