"""The ``tpu`` device as Dynamo and Inductor see it (``torch._dynamo.device_interface``).

PyTorch registers an interface of its own for "tpu" (for Inductor's Pallas code generator, over
JAX's TPU devices), whose ``device_count()`` raises. Ours answers for torch_tpu's chips through
``torch.tpu``. It is registered when Dynamo's module loads (registration.py), so a process that
never compiles pays nothing for it."""

from collections import namedtuple

import torch
from torch._dynamo.device_interface import DeviceInterface

# Quantized dtypes are not supported on tpu yet; every other dtype is.
_QUANTIZED = (torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4)
_TpuProperties = namedtuple("_TpuProperties", ["name", "total_memory", "multi_processor_count"])


def _properties(device=None) -> _TpuProperties:
    properties = torch.tpu.get_device_properties(device)
    return _TpuProperties(properties.name, properties.total_memory,
                          properties.multi_processor_count)


class TpuDeviceInterface(DeviceInterface):
    device = torch.tpu.device
    Stream = torch.tpu.Stream

    class Event(torch.Event):
        def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                    interprocess: bool = False):
            return torch.tpu.Event(enable_timing=enable_timing, blocking=blocking,
                                   interprocess=interprocess)

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch.tpu.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch.tpu.current_device()

        @staticmethod
        def get_device_properties(device=None) -> _TpuProperties:
            return _properties(device)

    @staticmethod
    def current_device() -> int:
        return torch.tpu.current_device()

    @staticmethod
    def set_device(device) -> None:
        torch.tpu.set_device(device)

    @staticmethod
    def exchange_device(device: int) -> int:
        previous = torch.tpu.current_device()
        if device != previous:
            torch.tpu.set_device(device)
        return previous

    maybe_exchange_device = exchange_device

    @staticmethod
    def device_count() -> int:
        return torch.tpu.device_count()

    @staticmethod
    def is_available() -> bool:
        return torch.tpu.is_available()

    @staticmethod
    def stream(stream: torch.Stream):
        return torch.tpu.stream(stream)

    @staticmethod
    def current_stream() -> torch.Stream:
        return torch.tpu.current_stream()

    @staticmethod
    def set_stream(stream: torch.Stream) -> None:
        torch.tpu.set_stream(stream)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        torch.tpu.set_stream(torch.Stream(stream_id=stream_id, device_index=device_index,
                                          device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return torch.tpu.current_stream(device_idx).stream_id

    @staticmethod
    def synchronize(device=None) -> None:
        torch.tpu.synchronize(device)

    @classmethod
    def get_device_properties(cls, device=None) -> _TpuProperties:
        return _properties(device)

    @staticmethod
    def get_compute_capability(device=None):
        return torch.tpu.get_device_capability(device)

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @classmethod
    def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
        return dtype not in _QUANTIZED

    @staticmethod
    def memory_allocated(device=None) -> int:
        return torch.tpu.memory_allocated(device)
