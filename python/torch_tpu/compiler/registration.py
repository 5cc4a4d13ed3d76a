"""How the compiler plugs into PyTorch, at ``import torch_tpu``, without importing Dynamo (a
second and a half) in processes that never compile:

- ``backend="tpu"``: the package's ``torch_dynamo_backends`` entry point (pyproject.toml), which
  Dynamo reads when it first looks a backend name up.
- The ``tpu`` device interface: registered as soon as ``torch._dynamo.device_interface`` has
  loaded, replacing PyTorch's own Pallas/JAX one (device_interface.py).
- ``torch.compile(model)`` with the default backend: graphs on tpu go to the ``tpu`` backend
  (the routing is in ``torch_tpu._torch_patches``); graphs on any other device are compiled
  exactly as before.
"""

import importlib.abc
import importlib.util
import sys

_DEVICE_INTERFACE_MODULE = "torch._dynamo.device_interface"


def install() -> None:
    if _DEVICE_INTERFACE_MODULE in sys.modules:
        _register_device_interface(sys.modules[_DEVICE_INTERFACE_MODULE])
    elif not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(_DEVICE_INTERFACE_MODULE, _register_device_interface))


def _register_device_interface(module) -> None:
    from .device_interface import TpuDeviceInterface
    # Its lazy first registration would put PyTorch's "tpu" interface back over ours.
    module.init_device_reg()
    module.register_interface_for_device("tpu", TpuDeviceInterface)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``action(module)`` once the module named ``module_name`` has executed. Python has no
    post-import hook: this finder finds the module's spec through the other finders and wraps
    its loader's ``exec_module``."""

    def __init__(self, module_name: str, action):
        self._module_name = module_name
        self._action = action

    def find_spec(self, fullname, path, target=None):
        if fullname != self._module_name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader_exec = spec.loader.exec_module
        action = self._action

        def exec_module(module):
            loader_exec(module)
            action(module)

        spec.loader.exec_module = exec_module
        return spec
