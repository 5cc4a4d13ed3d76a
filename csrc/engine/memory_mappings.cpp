#include "engine/memory_mappings.h"

#include <array>
#include <atomic>
#include <cstdio>

namespace torch_tpu::engine {
namespace {

int64_t count_lines(const char* path) {
  std::FILE* file = std::fopen(path, "r");
  if (file == nullptr) return -1;
  std::array<char, 1 << 16> chunk;
  int64_t lines = 0;
  size_t read = 0;
  while ((read = std::fread(chunk.data(), 1, chunk.size(), file)) > 0) {
    for (size_t i = 0; i < read; ++i) lines += chunk[i] == '\n';
  }
  std::fclose(file);
  return lines;
}

int64_t read_number(const char* path) {
  std::FILE* file = std::fopen(path, "r");
  if (file == nullptr) return -1;
  long long value = -1;
  if (std::fscanf(file, "%lld", &value) != 1) value = -1;
  std::fclose(file);
  return value;
}

}  // namespace

MemoryMappings memory_mappings() {
  return {count_lines("/proc/self/maps"), read_number("/proc/sys/vm/max_map_count")};
}

bool memory_mappings_near_limit() {
  constexpr int64_t kCheckEvery = 32;
  static std::atomic<int64_t> calls{0};
  if (calls.fetch_add(1, std::memory_order_relaxed) % kCheckEvery != 0) return false;
  const MemoryMappings mappings = memory_mappings();
  return mappings.in_use >= 0 && mappings.limit > 0 && mappings.in_use * 4 > mappings.limit * 3;
}

}  // namespace torch_tpu::engine
