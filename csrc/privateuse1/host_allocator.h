// Pinned host memory for tpu (pin_memory(), DataLoader(pin_memory=True), non_blocking copies).
// PyTorch's generic caching host allocator does the caching; we provide the memory, the
// stream events that keep a block from reuse while a queued copy still reads it, and the
// "is this pointer pinned" lookup.
#pragma once

#include <c10/core/Allocator.h>

namespace torch_tpu::privateuse1 {

// The registered host allocator for PrivateUse1.
c10::Allocator* pinned_memory_allocator();
// True if `ptr` lies inside a live pinned block.
bool is_pinned_ptr(const void* ptr);

}  // namespace torch_tpu::privateuse1
