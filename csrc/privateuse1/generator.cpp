#include "privateuse1/generator.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/MT19937RNGEngine.h>
#include <ATen/ops/empty.h>

#include "engine/launch.h"
#include "privateuse1/philox.h"

namespace torch_tpu::privateuse1 {
namespace {

constexpr size_t kStateBytes = 2 * sizeof(uint64_t);  // seed, offset

// The mt19937 one op's kernel draws from: all 624 words of its state are Philox output for
// counters (offset, block) under key `seed`, so two offsets give unrelated streams (seeding an
// mt19937 from one 32-bit value, as mt19937(seed) does, would let ops share streams).
at::Generator philox_seeded_cpu_generator(uint64_t seed, uint64_t offset) {
  at::mt19937_data_pod data{};
  data.seed_ = seed;
  data.seeded_ = true;
  data.left_ = 1;  // the first draw mixes the state (mt19937's next_state) before reading it
  data.next_ = 0;
  for (uint32_t block = 0; block * 4 < data.state_.size(); ++block) {
    const PhiloxBlock words = philox4x32_10(
        {static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), block, 0}, seed);
    for (size_t k = 0; k < 4 && block * 4 + k < data.state_.size(); ++k) data.state_[block * 4 + k] = words[k];
  }
  at::mt19937 engine;
  engine.set_data(data);
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  static_cast<at::CPUGeneratorImpl*>(generator.unsafeGetGeneratorImpl())->set_engine(engine);
  return generator;
}

uint64_t read_u64(const uint8_t* bytes) {
  uint64_t value;
  std::memcpy(&value, bytes, sizeof(value));
  return value;
}

}  // namespace

bool uses_cpu_random_stream() {
  static const bool cpu = [] {
    const char* value = std::getenv("TORCH_TPU_RNG");
    const std::string choice = value == nullptr ? "" : value;
    TORCH_CHECK(choice.empty() || choice == "philox" || choice == "cpu", "TORCH_TPU_RNG='", choice,
                "' is not understood: use 'philox' (the default) or 'cpu'");
    return choice == "cpu";
  }();
  return cpu;
}

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed),
      cpu_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

void TpuGeneratorImpl::wait_for_queued_work() const {
  engine::sync_device(device().index(), "rng_state");
}

void TpuGeneratorImpl::set_current_seed(uint64_t seed) {
  if (uses_cpu_random_stream()) {
    wait_for_queued_work();
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    cpu_.set_current_seed(seed);
  }
  seed_ = seed;
  offset_ = 0;
}

void TpuGeneratorImpl::set_offset(uint64_t offset) {
  TORCH_CHECK(!uses_cpu_random_stream(),
              "the tpu generator draws CPU's stream (TORCH_TPU_RNG=cpu), which has no offset");
  offset_ = offset;
}

uint64_t TpuGeneratorImpl::get_offset() const {
  TORCH_CHECK(!uses_cpu_random_stream(),
              "the tpu generator draws CPU's stream (TORCH_TPU_RNG=cpu), which has no offset");
  return offset_;
}

uint64_t TpuGeneratorImpl::current_seed() const { return seed_; }

uint64_t TpuGeneratorImpl::seed() {
  const uint64_t random = c10::detail::getNonDeterministicRandom(false);
  set_current_seed(random);
  return random;
}

void TpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  if (uses_cpu_random_stream()) {
    wait_for_queued_work();
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    cpu_.unsafeGetGeneratorImpl()->set_state(new_state);
    seed_ = cpu_.current_seed();
    return;
  }
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.device().is_cpu(),
              "a tpu RNG state is a CPU uint8 tensor, got ", new_state.dtype(), " on ", new_state.device());
  TORCH_CHECK(static_cast<size_t>(new_state.numel()) == kStateBytes,
              "a tpu RNG state is ", kStateBytes, " bytes (seed, offset), got ", new_state.numel(),
              " (a CPU generator's state, or one saved with TORCH_TPU_RNG=cpu, does not fit)");
  TORCH_CHECK(new_state.is_contiguous(), "a tpu RNG state must be contiguous");
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  seed_ = read_u64(bytes);
  offset_ = read_u64(bytes + sizeof(uint64_t));
}

c10::intrusive_ptr<c10::TensorImpl> TpuGeneratorImpl::get_state() const {
  if (uses_cpu_random_stream()) {
    wait_for_queued_work();
    std::lock_guard<std::mutex> lock(cpu_.mutex());
    return cpu_.unsafeGetGeneratorImpl()->get_state();
  }
  at::Tensor state = at::empty({static_cast<int64_t>(kStateBytes)}, at::kByte);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, sizeof(uint64_t));
  std::memcpy(bytes + sizeof(uint64_t), &offset_, sizeof(uint64_t));
  return state.unsafeReleaseIntrusivePtr();
}

at::Generator TpuGeneratorImpl::take_op_stream(uint64_t draws) {
  if (uses_cpu_random_stream()) return cpu_;
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t offset = offset_;
  offset_ += (draws + 3) / 4 * 4;
  return philox_seeded_cpu_generator(seed_, offset);
}

TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  auto* copy = new TpuGeneratorImpl(device().index(), seed_);
  copy->offset_ = offset_;
  if (uses_cpu_random_stream()) {
    wait_for_queued_work();
    copy->cpu_ = cpu_.clone();
  }
  return copy;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag once;
  static std::deque<at::Generator> generators;  // deque: references stay valid
  std::call_once(once, [] {
    const int count = runtime::Runtime::instance().chip_count();
    for (int i = 0; i < count; ++i) {
      generators.push_back(at::make_generator<TpuGeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
    }
  });
  const int index = device < 0 ? engine::current_device() : device;
  engine::chip(index);  // validates the index with a clear message
  return generators[index];
}

at::Generator make_generator(c10::DeviceIndex device) {
  const int index = device < 0 ? engine::current_device() : device;
  engine::chip(index);
  return at::make_generator<TpuGeneratorImpl>(static_cast<c10::DeviceIndex>(index));
}

at::Generator op_stream_for(const at::Generator& tpu_generator, uint64_t draws) {
  auto* impl = dynamic_cast<TpuGeneratorImpl*>(tpu_generator.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "expected a tpu generator, got one for ", tpu_generator.device());
  return impl->take_op_stream(draws);
}

}  // namespace torch_tpu::privateuse1
