// How close this process is to the kernel's limit on memory mappings (Linux's
// vm.max_map_count, 65530 by default). Executables of JIT-compiling executors hold mappings
// (PJRT's CPU plugin: about four for a one-op program, more for large ones), and past the
// limit every mmap fails: the plugin then aborts the process (a thread it cannot create) or
// fails the compile ("Failed to materialize symbols"). The executable cache drops what it
// holds before that happens. Torch-free.
#pragma once

#include <cstdint>

namespace torch_tpu::engine {

struct MemoryMappings {
  int64_t in_use = -1;  // -1: unknown (no /proc)
  int64_t limit = -1;
};
// Reads /proc/self/maps and /proc/sys/vm/max_map_count (about a millisecond per 10,000
// mappings).
MemoryMappings memory_mappings();

// True when mappings in use exceed three quarters of the limit. Checks every 32nd call only:
// a compile adds a handful of mappings, so the quarter left is far more than 32 compiles need.
bool memory_mappings_near_limit();

}  // namespace torch_tpu::engine
