// CPU views over chip memory that overlap (two arguments of one op over the same tpu storage:
// `x.add_(x)`, an out= slice of the op's own input) get one storage between them, as their tpu
// tensors share one. Made separately, each view has a storage of its own, and ATen's kernels
// could not see the aliasing: their checks of partial overlap never fired (a result where CPU
// raises), and nor did any choice they make on `is_alias_of` and storage offsets.
#pragma once

#include <cstddef>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

namespace torch_tpu::executors::host {

// Regroups `views` (CPU views made by cpu_view_of, about to be handed to one CPU kernel) in
// place: each set of overlapping views is given one storage spanning them all, each view then
// sitting at its own offset in it. Such a shared storage is not resizable (a kernel growing
// one output past its span must fail, not move its inputs' memory). Views that overlap none
// are left as they are.
void share_storage_of_overlapping_views(c10::ArrayRef<at::Tensor> views);

// The same over the views an op's argument rebuild made: views[first, end), each read by
// `tensor_of`.
template <typename View, typename TensorOf>
void share_storage_of_overlapping_views(const std::vector<View>& views, size_t first,
                                        TensorOf tensor_of) {
  if (views.size() - first < 2) return;
  c10::SmallVector<at::Tensor, 6> made;
  for (size_t i = first; i < views.size(); ++i) made.push_back(tensor_of(views[i]));
  share_storage_of_overlapping_views(made);
}

}  // namespace torch_tpu::executors::host
