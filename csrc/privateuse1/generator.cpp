#include "privateuse1/generator.h"

#include <deque>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

#include "engine/launch.h"

namespace torch_tpu::privateuse1 {

TpuGeneratorImpl::TpuGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      cpu_(at::make_generator<at::CPUGeneratorImpl>(seed)) {}

void TpuGeneratorImpl::wait_for_queued_work() const {
  engine::sync_device(device().index(), "rng_state");
}

void TpuGeneratorImpl::set_current_seed(uint64_t seed) {
  wait_for_queued_work();
  std::lock_guard<std::mutex> lock(cpu_.mutex());
  cpu_.set_current_seed(seed);
}

void TpuGeneratorImpl::set_offset(uint64_t offset) {
  TORCH_CHECK(false, "the tpu generator is a Mersenne Twister and has no offset (set_offset)");
}

uint64_t TpuGeneratorImpl::get_offset() const {
  TORCH_CHECK(false, "the tpu generator is a Mersenne Twister and has no offset (get_offset)");
}

uint64_t TpuGeneratorImpl::current_seed() const { return cpu_.current_seed(); }

uint64_t TpuGeneratorImpl::seed() {
  wait_for_queued_work();
  std::lock_guard<std::mutex> lock(cpu_.mutex());
  return cpu_.seed();
}

void TpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  wait_for_queued_work();
  std::lock_guard<std::mutex> lock(cpu_.mutex());
  cpu_.unsafeGetGeneratorImpl()->set_state(new_state);
}

c10::intrusive_ptr<c10::TensorImpl> TpuGeneratorImpl::get_state() const {
  wait_for_queued_work();
  std::lock_guard<std::mutex> lock(cpu_.mutex());
  return cpu_.unsafeGetGeneratorImpl()->get_state();
}

TpuGeneratorImpl* TpuGeneratorImpl::clone_impl() const {
  wait_for_queued_work();
  auto* copy = new TpuGeneratorImpl(device().index());
  copy->cpu_ = cpu_.clone();
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

at::Generator cpu_generator_for(const at::Generator& tpu_generator) {
  auto* impl = dynamic_cast<TpuGeneratorImpl*>(tpu_generator.unsafeGetGeneratorImpl());
  TORCH_CHECK(impl != nullptr, "expected a tpu generator, got one for ",
              tpu_generator.device());
  return impl->cpu_generator();
}

}  // namespace torch_tpu::privateuse1
