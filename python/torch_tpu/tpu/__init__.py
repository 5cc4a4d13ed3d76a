"""``torch.tpu``: the device module of the ``tpu`` backend, shaped like ``torch.cuda``."""

import contextlib
import threading
from typing import Any, NamedTuple, Optional, Union

import torch

from .. import _C

_DeviceLike = Union[int, str, torch.device, None]

_initialized = False
_init_lock = threading.Lock()


def _device_index(device: _DeviceLike, optional: bool = True) -> int:
    if device is None:
        if not optional:
            raise ValueError("expected a tpu device, got None")
        return current_device()
    if isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        if device.type != "tpu":
            raise ValueError(f"expected a tpu device, got {device}")
        index = current_device() if device.index is None else device.index
    count = device_count()
    if not 0 <= index < count:
        raise RuntimeError(
            f"invalid tpu device index {index}: there are {count} chips (valid: 0..{count - 1})"
        )
    return index


# --- availability and initialisation ---------------------------------------------------------

def is_available() -> bool:
    return device_count() > 0


def device_count() -> int:
    return _C._device_count()


def is_initialized() -> bool:
    return _initialized


def init() -> None:
    _lazy_init()


def _lazy_init() -> None:
    global _initialized
    if _is_in_bad_fork():
        raise RuntimeError(
            "Cannot re-initialize tpu in a forked subprocess: the parent had initialized it. To "
            "use tpu with multiprocessing, use the 'spawn' or 'forkserver' start method")
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            _C._init()
            _initialized = True


def _is_in_bad_fork() -> bool:
    return _C._is_in_bad_fork()


# --- current device --------------------------------------------------------------------------

def current_device() -> int:
    return _C._get_device()


def set_device(device: _DeviceLike) -> None:
    _C._set_device(_device_index(device, optional=False))


class device:
    """Context manager that makes ``index`` the current tpu device inside the block."""

    def __init__(self, device: _DeviceLike):
        self.index = -1 if device is None else _device_index(device)
        self.previous = -1

    def __enter__(self):
        self.previous = current_device()
        if self.index >= 0:
            set_device(self.index)

    def __exit__(self, *exc):
        if self.index >= 0:
            set_device(self.previous)
        return False


def synchronize(device: _DeviceLike = None) -> None:
    """Waits for all work queued on the chip; raises the first error an async op hit."""
    _C._synchronize(_device_index(device))


class _DeviceProperties(NamedTuple):
    name: str
    total_memory: int
    multi_processor_count: int = 1

    def __repr__(self):
        return (f"_TpuDeviceProperties(name='{self.name}', "
                f"total_memory={self.total_memory // (1024 * 1024)}MB)")


def get_device_name(device: _DeviceLike = None) -> str:
    """The host runtime's chip name, or on the PJRT runtime the plugin's device, e.g.
    ``"PJRT cpu device (plugin 'cpu', PJRT C API 0.106)"``."""
    index = _device_index(device)
    info = _C._pjrt_runtime_info()
    if info is None:
        return _C._device_name(index)
    return (f"PJRT {info['platform']} device (plugin '{info['plugin']}', "
            f"PJRT C API {info['api_version']})")


def get_device_properties(device: _DeviceLike = None) -> _DeviceProperties:
    index = _device_index(device)
    return _DeviceProperties(get_device_name(index), _C._device_capacity(index))


def get_device_capability(device: _DeviceLike = None) -> tuple:
    return (0, 0)


# --- random numbers --------------------------------------------------------------------------

def _generator(device: _DeviceLike = None) -> torch.Generator:
    return _C._default_generator(_device_index(device))


class _DefaultGenerators:
    def __getitem__(self, index: int) -> torch.Generator:
        return _generator(index)

    def __len__(self) -> int:
        return device_count()


default_generators = _DefaultGenerators()


def manual_seed(seed: int) -> None:
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for index in range(device_count()):
        _generator(index).manual_seed(int(seed))


def seed() -> None:
    _generator().seed()


def seed_all() -> None:
    first = _generator(0).seed()
    for index in range(1, device_count()):
        _generator(index).manual_seed(first)


def initial_seed() -> int:
    return _generator().initial_seed()


def get_rng_state(device: _DeviceLike = None) -> torch.Tensor:
    return _generator(device).get_state()


def set_rng_state(new_state: torch.Tensor, device: _DeviceLike = None) -> None:
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


# --- streams and events ----------------------------------------------------------------------

class Stream(torch.Stream):
    """An in-order execution queue of a tpu chip (``torch.Stream`` on ``tpu``)."""

    def __new__(cls, device: _DeviceLike = None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # rebuilding an existing stream
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=torch.device("tpu", _device_index(device)),
                               priority=priority)


def Event(enable_timing: bool = False, blocking: bool = False,  # noqa: N802 (torch.cuda.Event)
          interprocess: bool = False) -> torch.Event:
    """A marker in a tpu stream: a ``torch.Event`` on ``tpu`` (a factory, since torch.Event's
    methods reject subclasses)."""
    return torch.Event(device="tpu", enable_timing=enable_timing, blocking=blocking,
                       interprocess=interprocess)


def current_stream(device: _DeviceLike = None) -> torch.Stream:
    return torch.accelerator.current_stream(_device_index(device))


def default_stream(device: _DeviceLike = None) -> torch.Stream:
    index = _device_index(device)
    return torch.Stream(stream_id=0, device_index=index,
                        device_type=torch._C._autograd.DeviceType.PrivateUse1.value
                        if hasattr(torch._C._autograd, "DeviceType") else 20)


def set_stream(stream: torch.Stream) -> None:
    if stream is not None:
        torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(stream: Optional[torch.Stream]):
    """Makes ``stream`` current on its chip inside the block (``None`` is a no-op)."""
    if stream is None:
        yield
        return
    previous = torch.accelerator.current_stream(stream.device_index)
    torch.accelerator.set_stream(stream)
    try:
        yield
    finally:
        torch.accelerator.set_stream(previous)


# --- memory ----------------------------------------------------------------------------------

def memory_stats(device: _DeviceLike = None) -> dict:
    return torch.accelerator.memory_stats(_device_index(device))


def memory_allocated(device: _DeviceLike = None) -> int:
    return torch.accelerator.memory_allocated(_device_index(device))


def max_memory_allocated(device: _DeviceLike = None) -> int:
    return torch.accelerator.max_memory_allocated(_device_index(device))


def memory_reserved(device: _DeviceLike = None) -> int:
    return torch.accelerator.memory_reserved(_device_index(device))


def max_memory_reserved(device: _DeviceLike = None) -> int:
    return torch.accelerator.max_memory_reserved(_device_index(device))


def reset_peak_memory_stats(device: _DeviceLike = None) -> None:
    torch.accelerator.reset_peak_memory_stats(_device_index(device))


def reset_accumulated_memory_stats(device: _DeviceLike = None) -> None:
    torch.accelerator.reset_accumulated_memory_stats(_device_index(device))


def empty_cache() -> None:
    torch.accelerator.empty_cache()


def mem_get_info(device: _DeviceLike = None) -> tuple:
    return torch.accelerator.get_memory_info(_device_index(device))


# --- autocast --------------------------------------------------------------------------------

def get_amp_supported_dtype() -> list:
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def _is_autocast_enabled() -> bool:
    return torch.is_autocast_enabled("tpu")


def _get_autocast_dtype() -> Any:
    return torch.get_autocast_dtype("tpu")
