"""Which runtime the tpu device runs on: the host runtime (software chips on the CPU cores, the
default) or PJRT (programs lowered to StableHLO and run through a PJRT plugin: the CPU plugin,
libtpu on a TPU host, the CUDA plugin on a GPU). Chosen once, before the first tpu tensor:
``TORCH_TPU_RUNTIME=pjrt`` in the environment, or :func:`set_runtime`."""

import atexit
import os
import site
import sys
import warnings

import torch

from . import _C

RUNTIME_NAMES = ("host", "pjrt")
_DEFAULT_PLUGIN = "cpu"


def _search_dirs() -> list:
    """Where named plugins' packages are looked for: this interpreter's site-packages."""
    dirs = [path for path in sys.path if path.endswith("site-packages")]
    for path in site.getsitepackages() + [site.getusersitepackages()]:
        if path not in dirs:
            dirs.append(path)
    return dirs


def _disk_cache_dir() -> str:
    """Where compiled PJRT executables are kept between processes: ``TORCH_TPU_PJRT_CACHE_DIR``
    (empty: nowhere), else ``$XDG_CACHE_HOME/torch_tpu/pjrt`` (``~/.cache/torch_tpu/pjrt``)."""
    if "TORCH_TPU_PJRT_CACHE_DIR" in os.environ:
        return os.environ["TORCH_TPU_PJRT_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torch_tpu", "pjrt")


def set_runtime(name: str, plugin: str = None) -> None:
    """Selects the runtime: ``"host"`` (the default) or ``"pjrt"``. ``plugin`` names the PJRT
    plugin: ``"cpu"``, ``"tpu"`` (libtpu), ``"cuda"``, or a path to a plugin library (default:
    ``TORCH_TPU_PJRT_PLUGIN``, else ``"cpu"``). Call it before the first tpu tensor. The PJRT
    runtime runs every mode (fused mode compiles each flush as one StableHLO program); ops
    without a StableHLO lowering run on the host's kernels through a device -> host -> device
    round trip, counted in ``torch_tpu.metrics()["fallbacks"]``. Compiled executables are kept
    on disk between processes (``TORCH_TPU_PJRT_CACHE_DIR``; empty disables it)."""
    if name not in RUNTIME_NAMES:
        raise ValueError(f"unknown tpu runtime {name!r}; expected one of {', '.join(RUNTIME_NAMES)}")
    if name == get_runtime():
        return
    if name == "host":
        raise RuntimeError("the PJRT runtime is already selected; the runtime is chosen once, "
                           "before the first tpu tensor")
    plugin = plugin or os.environ.get("TORCH_TPU_PJRT_PLUGIN") or _DEFAULT_PLUGIN
    # libtpu otherwise spends minutes looking for a cloud metadata server first.
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    if plugin == "cpu":
        # The CPU plugin logs two ERROR lines ("Target machine feature +prefer-no-gather is not
        # supported on the host machine ... could lead to SIGILL") for every executable it
        # loads from the disk cache: the compile's tuning flags compared as if they were CPU
        # features, harmless. Only fatal messages are kept unless the user asks otherwise; the
        # plugin's errors reach Python as exceptions with its message either way.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        # With AVX-512 the plugin compiles a float16 product followed by a sum without
        # rounding the product to float16 between them (x * x + 0.05 differed from CPU in 1063
        # of 4096 elements on a Sapphire Rapids host), unlike eager PyTorch; AVX2 code rounds
        # as each op does. XLA reads its flags from the environment when the plugin starts
        # (a per-compile option override did not reach its code generator).
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_cpu_max_isa" not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_max_isa=AVX2".strip()
    info = _C._select_pjrt_runtime(plugin, _search_dirs(), _disk_cache_dir())
    atexit.register(_at_exit)
    if torch.tpu.device_count() < info["devices"] and not _environment_asks_for_devices():
        warnings.warn(f"the PJRT runtime drives {torch.tpu.device_count()} of the plugin's "
                      f"{info['devices']} devices: the device count was asked for before the "
                      "runtime was selected (set TORCH_TPU_RUNTIME before starting Python to "
                      "have them all)", stacklevel=2)


def _environment_asks_for_devices() -> bool:
    """Whether TORCH_TPU_HOST_CHIPS or torchrun's LOCAL_WORLD_SIZE sets the device count."""
    return bool(os.environ.get("TORCH_TPU_HOST_CHIPS") or os.environ.get("LOCAL_WORLD_SIZE"))


def _at_exit():
    """The plugin's state may be torn down before ours at exit (it creates statics lazily):
    finish queued work, then leave PJRT handles still alive to the operating system."""
    try:
        torch.tpu.synchronize()
    except Exception:  # noqa: BLE001 (a failed op must not turn exit into an error)
        pass
    _C._pjrt_process_exiting()


def get_runtime() -> str:
    """``"host"`` or ``"pjrt"``."""
    return "host" if _C._pjrt_runtime_info() is None else "pjrt"


def runtime_info() -> dict:
    """``{"runtime": "host"|"pjrt", "executor": ...}``; on PJRT also the plugin (name, path, API
    version, attributes such as its XLA and StableHLO versions), platform, device count and
    ``disk_cache`` (its folder, hits, misses and stores; None when disabled)."""
    info = _C._pjrt_runtime_info()
    if info is None:
        return {"runtime": "host", "executor": _C._executor_name()}
    return {"runtime": "pjrt", **info}


def select_from_environment() -> None:
    """Honours ``TORCH_TPU_RUNTIME`` at import."""
    name = os.environ.get("TORCH_TPU_RUNTIME", "").strip().lower()
    if name:
        set_runtime(name)
