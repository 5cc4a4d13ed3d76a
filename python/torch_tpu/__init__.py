"""torch_tpu: a PyTorch-native TPU backend.

Importing this package (or just ``import torch``, through the ``torch.backends`` entry point)
registers the ``tpu`` device: PrivateUse1 renamed to ``tpu``, the ``torch.tpu`` module,
``Tensor.tpu()`` / ``Module.tpu()``, and the native kernels. The default chips are the host
runtime's software chips.
"""



def _autoload():
    """Entry point of the ``torch.backends`` group: importing the package does everything.
    Defined before ``import torch`` because that import calls it while this module is still
    loading (when the user imported torch_tpu first)."""


import torch  # noqa: E402

from . import _C  # noqa: E402  # loads the native core; its static registrars install the kernels

if torch._C._get_privateuse1_backend_name() != "tpu":
    torch.utils.rename_privateuse1_backend("tpu")

from . import tpu as _tpu_module  # noqa: E402

if not hasattr(torch, "tpu"):
    torch._register_device_module("tpu", _tpu_module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )
    # TPUs compute in bfloat16 natively; CUDA's float16 default would be a poor fit.
    torch.set_autocast_dtype("tpu", torch.bfloat16)

from ._runtime import get_runtime, runtime_info, set_runtime  # noqa: E402
from ._metrics import metrics, reset_metrics  # noqa: E402
from ._modes import (  # noqa: E402
    get_mode, mode, mode_names, set_check_nans, set_mode, set_record_python_lines,
    wait_for_kernel_compiles)
from ._shutdown import install as _install_shutdown_hook  # noqa: E402
from .distributed import register as _register_tpu_dist  # noqa: E402
from ._torch_patches import install as _install_torch_patches  # noqa: E402
from .compiler.registration import install as _install_compiler  # noqa: E402
from . import _runtime, _saved_recipes  # noqa: E402

_register_tpu_dist()
_install_torch_patches()
_install_compiler()
_runtime.select_from_environment()

_install_shutdown_hook()
_saved_recipes.follow_mode()  # fused mode chosen through the environment

__all__ = ["get_mode", "get_runtime", "metrics", "mode", "mode_names", "reset_metrics",
           "runtime_info", "set_check_nans", "set_mode", "set_record_python_lines", "set_runtime"]
