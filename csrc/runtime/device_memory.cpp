#include "runtime/device_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "runtime/status.h"

namespace torch_tpu::runtime {
namespace {

// Chips sit 2^52 bytes apart (see chip_base_address); a larger chip would overlap the next one.
constexpr size_t kMaxCapacity = size_t{1} << 52;

size_t round_up_to_segment(size_t bytes) {
  return (bytes + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
}

std::string hex(DeviceAddress address) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(address));
  return text;
}

}  // namespace

DeviceMemory::DeviceMemory(int chip_index, size_t capacity)
    : chip_index_(chip_index), capacity_(0), base_(chip_base_address(chip_index)) {
  if (capacity == 0 || capacity > kMaxCapacity) {
    throw RuntimeError("tpu:" + std::to_string(chip_index) + ": invalid memory capacity " +
                       std::to_string(capacity) + " bytes (must be in 1..2^52)");
  }
  capacity_ = round_up_to_segment(capacity);
  free_ranges_.emplace(0, capacity_);
}

DeviceMemory::~DeviceMemory() {
  if (char* mapping = host_base_.load()) munmap(mapping, capacity_);
}

void DeviceMemory::map_capacity() {
  // NORESERVE: the whole capacity is address space only; pages are committed when first
  // touched, so a 16 GiB chip costs nothing until tensors are written.
  void* mapping = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    throw RuntimeError("tpu:" + std::to_string(chip_index_) + ": cannot map " +
                       std::to_string(capacity_) + " bytes of chip memory: " +
                       std::strerror(errno));
  }
  host_base_.store(static_cast<char*>(mapping), std::memory_order_release);
}

DeviceAddress DeviceMemory::reserve_segment(size_t bytes) {
  if (bytes > capacity_) return 0;  // also keeps the rounding below from overflowing
  const size_t length = round_up_to_segment(bytes == 0 ? 1 : bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (host_base_.load(std::memory_order_relaxed) == nullptr) map_capacity();
  // First fit by offset keeps segments packed at the low end, which leaves the largest
  // contiguous range at the top for big requests.
  for (auto it = free_ranges_.begin(); it != free_ranges_.end(); ++it) {
    const auto [offset, range] = *it;
    if (range < length) continue;
    free_ranges_.erase(it);
    if (range > length) free_ranges_.emplace(offset + length, range - length);
    segments_.emplace(offset, length);
    reserved_ += length;
    return base_ + offset;
  }
  return 0;
}

void DeviceMemory::release_segment(DeviceAddress address, size_t bytes) {
  const size_t length = round_up_to_segment(bytes == 0 ? 1 : bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto segment =
      contains(address) ? segments_.find(address - base_) : segments_.end();
  if (segment == segments_.end() || segment->second != length) {
    throw RuntimeError("tpu:" + std::to_string(chip_index_) + ": release of " +
                       std::to_string(bytes) + " bytes at " + hex(address) +
                       " does not match a reserved segment");
  }
  const size_t offset = segment->first;
  segments_.erase(segment);
  reserved_ -= length;
  // Returns the pages to the OS (and zeroes them), so released memory stops counting as RSS.
  madvise(host_base_.load(std::memory_order_relaxed) + offset, length, MADV_DONTNEED);

  size_t start = offset;
  size_t size = length;
  auto next = free_ranges_.lower_bound(offset);
  if (next != free_ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_ranges_.erase(prev);
    }
  }
  if (next != free_ranges_.end() && next->first == offset + length) {
    size += next->second;
    free_ranges_.erase(next);
  }
  free_ranges_.emplace(start, size);
}

size_t DeviceMemory::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}

}  // namespace torch_tpu::runtime
