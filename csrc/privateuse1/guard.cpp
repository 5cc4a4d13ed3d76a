#include "privateuse1/guard.h"

#include "engine/deferral.h"
#include "engine/launch.h"
#include "privateuse1/device_allocator.h"
#include "runtime/event.h"

namespace torch_tpu::privateuse1 {
namespace {

using c10::Device;
using c10::DeviceType;
using c10::Stream;

Stream make_stream(c10::DeviceIndex device, int64_t id) {
  return Stream(Stream::UNSAFE, Device(DeviceType::PrivateUse1, device), id);
}

runtime::Stream& runtime_stream(const Stream& stream) {
  return engine::translate_errors([&]() -> runtime::Stream& {
    return engine::chip(stream.device_index()).stream(stream.id());
  });
}

}  // namespace

Device TpuGuardImpl::exchangeDevice(Device device) const {
  const Device previous = getDevice();
  if (device.index() != previous.index()) setDevice(device);
  return previous;
}

Device TpuGuardImpl::getDevice() const {
  return Device(DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(engine::current_device()));
}

void TpuGuardImpl::setDevice(Device device) const {
  TORCH_CHECK(device.type() == DeviceType::PrivateUse1, "expected a tpu device, got ", device);
  engine::set_current_device(device.index());
}

void TpuGuardImpl::uncheckedSetDevice(Device device) const noexcept {
  try {
    engine::set_current_device(device.index());
  } catch (...) {
    // noexcept by contract (used by guards' destructors); an invalid index was already
    // rejected when the guard was entered.
  }
}

c10::DeviceIndex TpuGuardImpl::deviceCount() const noexcept {
  if (runtime::Runtime::in_forked_child()) {
    return static_cast<c10::DeviceIndex>(runtime::Runtime::started_chip_count());
  }
  try {
    return static_cast<c10::DeviceIndex>(runtime::Runtime::instance().chip_count());
  } catch (...) {
    return 0;  // must never throw: "no devices" is the honest answer if the runtime failed
  }
}

c10::DeviceCapability TpuGuardImpl::getDeviceCapability(Device device) const {
  TORCH_CHECK(device.index() >= 0 && device.index() < deviceCount(), "tpu device index ",
              static_cast<int>(device.index()), " out of range: ", static_cast<int>(deviceCount()),
              " tpu devices");
  // The dtypes whose tensors can be copied to a chip, back, and converted to each other there.
  // Left out: quantized types (not supported yet), and the bit-container and 1- to 7-bit integer
  // shells, which not even CPU tensors can copy or convert.
  constexpr c10::ScalarType kSupported[] = {
      c10::kByte, c10::kChar, c10::kShort, c10::kInt, c10::kLong, c10::kUInt16, c10::kUInt32,
      c10::kUInt64, c10::kBool, c10::kHalf, c10::kBFloat16, c10::kFloat, c10::kDouble,
      c10::kComplexHalf, c10::kComplexFloat, c10::kComplexDouble, c10::kFloat8_e5m2,
      c10::kFloat8_e4m3fn, c10::kFloat8_e5m2fnuz, c10::kFloat8_e4m3fnuz, c10::kFloat8_e8m0fnu,
      c10::kFloat4_e2m1fn_x2};
  c10::DeviceCapability capability;
  capability.capability_data.capability_bits = 0;
  auto& types = capability.capability_data.supported_scalar_types;
  for (const c10::ScalarType type : kSupported) {
#define TORCH_TPU_ENABLE_TYPE(_, name) \
  if (type == c10::ScalarType::name) types.has_##name = 1;
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(TORCH_TPU_ENABLE_TYPE)
#undef TORCH_TPU_ENABLE_TYPE
  }
  return capability;
}

Stream TpuGuardImpl::getStream(Device device) const noexcept {
  const auto index = device.has_index() ? device.index()
                                        : static_cast<c10::DeviceIndex>(engine::current_device());
  return make_stream(index, engine::current_stream_id(index));
}

Stream TpuGuardImpl::getDefaultStream(Device device) const {
  return make_stream(device.index(), runtime::kDefaultStreamId);
}

Stream TpuGuardImpl::getStreamFromGlobalPool(Device device, bool isHighPriority) const {
  const auto index = device.has_index() ? device.index()
                                        : static_cast<c10::DeviceIndex>(engine::current_device());
  runtime::Stream& stream = engine::chip(index).pool_stream(isHighPriority);
  return make_stream(index, stream.id());
}

Stream TpuGuardImpl::getNewStream(Device device, int priority) const {
  return getStreamFromGlobalPool(device, priority < 0);
}

Stream TpuGuardImpl::exchangeStream(Stream stream) const noexcept {
  const auto index = stream.device_index();
  const Stream previous = make_stream(index, engine::current_stream_id(index));
  try {
    engine::set_current_stream_id(index, stream.id());
  } catch (...) {
    // noexcept by contract; streams handed to us come from this guard and are valid.
  }
  return previous;
}

bool TpuGuardImpl::queryStream(const Stream& stream) const {
  return runtime_stream(stream).query();
}

void TpuGuardImpl::synchronizeStream(const Stream& stream) const {
  engine::sync_stream(runtime_stream(stream), "stream_synchronize");
}

void TpuGuardImpl::synchronizeDevice(c10::DeviceIndex device_index) const {
  const auto index = device_index < 0 ? static_cast<c10::DeviceIndex>(engine::current_device())
                                      : device_index;
  engine::sync_device(index, "device_synchronize");
}

void TpuGuardImpl::record(void** event, const Stream& stream, c10::DeviceIndex device_index,
                          c10::EventFlag flag) const {
  TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
              "event device index ", static_cast<int>(device_index),
              " does not match the recording stream's device ",
              static_cast<int>(stream.device_index()));
  auto*& runtime_event = reinterpret_cast<runtime::Event*&>(*event);
  if (runtime_event == nullptr) {
    runtime_event = new runtime::Event(flag == c10::EventFlag::BACKEND_DEFAULT);
  }
  engine::record_mark(*runtime_event, runtime_stream(stream));
}

void TpuGuardImpl::block(void* event, const Stream& stream) const {
  if (event == nullptr) return;
  engine::block_on_event(*static_cast<runtime::Event*>(event), runtime_stream(stream));
}

bool TpuGuardImpl::queryEvent(void* event) const {
  return event == nullptr || static_cast<runtime::Event*>(event)->query();
}

void TpuGuardImpl::synchronizeEvent(void* event) const {
  if (event == nullptr) return;
  // A failure before the mark on its stream is raised here, as CUDA raises a kernel's error.
  const auto* runtime_event = static_cast<runtime::Event*>(event);
  engine::flush_recording_stream(*runtime_event, "event_synchronize");
  engine::translate_errors([runtime_event] {
    engine::blocking_wait([runtime_event] { runtime_event->synchronize(); });
  });
}

void TpuGuardImpl::recordDataPtrOnStream(const c10::DataPtr& data_ptr,
                                         const Stream& stream) const {
  // c10::ivalue::Future calls this for the tensors it hands to another stream.
  if (data_ptr.get() != nullptr) record_stream_use(data_ptr.get(), stream);
}

double TpuGuardImpl::elapsedTime(void* start, void* end, c10::DeviceIndex) const {
  TORCH_CHECK(start != nullptr && end != nullptr,
              "both events must be recorded before calculating elapsed time");
  return engine::translate_errors([&] {
    return static_cast<runtime::Event*>(start)->elapsed_ms(*static_cast<runtime::Event*>(end));
  });
}

void TpuGuardImpl::destroyEvent(void* event, c10::DeviceIndex) const noexcept {
  delete static_cast<runtime::Event*>(event);
}

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

}  // namespace torch_tpu::privateuse1
