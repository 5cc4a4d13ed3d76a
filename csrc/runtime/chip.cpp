#include "runtime/chip.h"

#include <pthread.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "runtime/event.h"
#include "runtime/status.h"

namespace torch_tpu::runtime {
namespace {

constexpr int kMaxChips = 64;
constexpr size_t kDefaultCapacity = size_t{16} << 30;  // 16 GiB, a v5e chip's HBM

// Priority of a stream slot: the default stream and the low pool are 0, the high pool -1
// (lower is higher, as in CUDA).
int priority_of(int64_t id) { return id > kStreamsPerPool ? -1 : 0; }

int parse_chip_count(const char* text, const char* variable) {
  char* end = nullptr;
  errno = 0;
  const long count = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || count < 1 || count > kMaxChips ||
      !std::isdigit(static_cast<unsigned char>(*text))) {
    throw RuntimeError(std::string(variable) + " must be an integer in 1.." +
                       std::to_string(kMaxChips) + ", got '" + text + "'");
  }
  return static_cast<int>(count);
}

bool is_set(const char* value) { return value != nullptr && *value != '\0'; }

// TORCH_TPU_HOST_CHIPS wins. Under torchrun (LOCAL_WORLD_SIZE set) a process sees one chip per
// local rank, as a process on a TPU or GPU host sees all of the host's devices, so scripts that
// pick `tpu:LOCAL_RANK` run unchanged. A chip that never holds a buffer maps no memory.
std::optional<int> chip_count_from_environment() {
  if (const char* chips = std::getenv("TORCH_TPU_HOST_CHIPS"); is_set(chips)) {
    return parse_chip_count(chips, "TORCH_TPU_HOST_CHIPS");
  }
  if (const char* local_world = std::getenv("LOCAL_WORLD_SIZE"); is_set(local_world)) {
    return parse_chip_count(local_world, "LOCAL_WORLD_SIZE");
  }
  return std::nullopt;
}

void record_now(Event& mark, Stream& stream) { mark.record(stream); }
std::atomic<MarkRecorder> g_mark_recorder{&record_now};

}  // namespace

void set_mark_recorder(MarkRecorder recorder) {
  g_mark_recorder.store(recorder != nullptr ? recorder : &record_now);
}

size_t parse_byte_size(const char* text, const char* variable) {
  const auto fail = [&]() -> size_t {
    throw RuntimeError(std::string(variable) + ": invalid byte size '" + (text ? text : "") +
                       "' (expected a positive integer with an optional K, M or G suffix, "
                       "e.g. 17179869184 or 16G)");
  };
  if (text == nullptr || !std::isdigit(static_cast<unsigned char>(*text))) return fail();
  const char* p = text;
  size_t value = 0;
  for (; std::isdigit(static_cast<unsigned char>(*p)); ++p) {
    const size_t digit = static_cast<size_t>(*p - '0');
    if (value > (std::numeric_limits<size_t>::max() - digit) / 10) return fail();
    value = value * 10 + digit;
  }
  int shift = 0;
  switch (*p) {
    case '\0': break;
    case 'K': case 'k': shift = 10; ++p; break;
    case 'M': case 'm': shift = 20; ++p; break;
    case 'G': case 'g': shift = 30; ++p; break;
    default: return fail();
  }
  if (*p != '\0' || value == 0) return fail();
  if (value > (std::numeric_limits<size_t>::max() >> shift)) return fail();
  return value << shift;
}

Chip::Chip(int index, size_t capacity)
    : index_(index),
      memory_(index, capacity),
      allocator_(memory_, [this](StreamId id) {
        Event mark;
        g_mark_recorder.load()(mark, stream(id));
        return mark;
      }),
      lazy_buffers_(index, allocator_) {}

Chip::~Chip() {
  // Streams go first and drain: their tasks may still free blocks into the allocator.
  for (auto& created : created_) created.store(nullptr);
  for (auto& stream : streams_) stream.reset();
}

std::string Chip::name() const { return "TPU host-runtime chip"; }

Stream& Chip::stream(int64_t id) {
  if (id < 0 || id >= static_cast<int64_t>(streams_.size())) {
    throw RuntimeError("invalid stream id " + std::to_string(id) + " on tpu:" +
                       std::to_string(index_) + " (valid: 0.." +
                       std::to_string(streams_.size() - 1) + ")");
  }
  const auto index = static_cast<size_t>(id);
  if (Stream* created = created_[index].load(std::memory_order_acquire)) return *created;
  std::lock_guard<std::mutex> lock(streams_mutex_);
  auto& slot = streams_[index];
  if (!slot) {
    slot = std::make_unique<Stream>(index_, id, priority_of(id));
    created_[index].store(slot.get(), std::memory_order_release);
  }
  return *slot;
}

Stream& Chip::pool_stream(bool high_priority) {
  const uint32_t turn = (high_priority ? next_high_ : next_low_).fetch_add(1);
  const int64_t offset = high_priority ? 1 + kStreamsPerPool : 1;
  return stream(offset + static_cast<int64_t>(turn % kStreamsPerPool));
}

void Chip::synchronize() {
  std::vector<Stream*> created;
  {
    // Streams are never destroyed before the chip, so the pointers outlive the lock.
    std::lock_guard<std::mutex> lock(streams_mutex_);
    for (auto& stream : streams_) {
      if (stream) created.push_back(stream.get());
    }
  }
  // Wait for all streams even after a failure, so the chip is idle when the error surfaces.
  std::optional<AsyncOpError> first_error;
  for (Stream* stream : created) {
    try {
      stream->synchronize();
    } catch (const AsyncOpError& error) {
      if (!first_error) first_error = error;
    }
  }
  if (first_error) throw *first_error;
}

namespace {

std::atomic<bool> g_forked_after_start{false};
std::atomic<int> g_started_chip_count{0};
std::atomic<int> g_chip_count_to_start_with{0};  // 0: the environment's

}  // namespace

Runtime& Runtime::instance() {
  // Function-local static: thread-safe creation on first use; if the environment is invalid
  // the constructor throws and the next call tries again.
  static Runtime runtime;
  if (g_forked_after_start.load(std::memory_order_relaxed)) {
    throw RuntimeError(
        "tpu cannot be used in a process forked after tpu was initialized in its parent (the "
        "runtime's threads do not survive a fork); to use tpu in child processes, use the "
        "'spawn' or 'forkserver' start method (torch.multiprocessing.set_start_method('spawn'))");
  }
  return runtime;
}

bool Runtime::in_forked_child() { return g_forked_after_start.load(std::memory_order_relaxed); }

int Runtime::started_chip_count() { return g_started_chip_count.load(std::memory_order_relaxed); }

std::optional<int> Runtime::requested_chip_count() { return chip_count_from_environment(); }

size_t Runtime::requested_capacity() {
  const char* hbm = std::getenv("TORCH_TPU_HBM_BYTES");
  return is_set(hbm) ? parse_byte_size(hbm, "TORCH_TPU_HBM_BYTES") : kDefaultCapacity;
}

bool Runtime::start_with_chip_count(int count) {
  if (count < 1 || count > kMaxChips) {
    throw RuntimeError("a runtime has 1.." + std::to_string(kMaxChips) + " chips, asked for " +
                       std::to_string(count));
  }
  if (started_chip_count() != 0) return false;
  g_chip_count_to_start_with.store(count, std::memory_order_relaxed);
  return true;
}

Runtime::Runtime() {
  const int chosen = g_chip_count_to_start_with.load(std::memory_order_relaxed);
  const int count = chosen > 0 ? chosen : chip_count_from_environment().value_or(1);
  const size_t capacity = requested_capacity();
  chips_.reserve(static_cast<size_t>(count));
  for (int index = 0; index < count; ++index) {
    chips_.push_back(std::make_unique<Chip>(index, capacity));
  }
  // Started: from here on a forked child must not use it.
  g_started_chip_count.store(count, std::memory_order_relaxed);
  static const int registered =
      pthread_atfork(nullptr, nullptr, [] { g_forked_after_start.store(true, std::memory_order_relaxed); });
  (void)registered;
}

// In a forked child the chips are the parent's: their queue threads are not here, and
// destroying a queue's condition variable would wait for waiters that were those threads
// (the child hung at exit). They are left as they are; the process is ending.
Runtime::~Runtime() {
  if (!in_forked_child()) return;
  for (std::unique_ptr<Chip>& chip : chips_) static_cast<void>(chip.release());
}

Chip& Runtime::chip(int index) {
  if (index < 0 || index >= chip_count()) {
    throw RuntimeError("invalid tpu device index " + std::to_string(index) + ": there are " +
                       std::to_string(chip_count()) + " chips (valid: 0.." +
                       std::to_string(chip_count() - 1) + ")");
  }
  return *chips_[static_cast<size_t>(index)];
}

Chip* Runtime::chip_of(DeviceAddress address) {
  const int index = chip_of_address(address);
  return index >= 0 && index < chip_count() ? chips_[static_cast<size_t>(index)].get()
                                            : nullptr;
}

}  // namespace torch_tpu::runtime
