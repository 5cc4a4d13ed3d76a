"""torch.compile on tpu.

``torch.compile(model, backend="tpu")`` — and ``torch.compile(model)`` when the graph's tensors
are on tpu — traces with Dynamo, lowers each graph to Core ATen with aot_autograd (a forward and,
when autograd needs one, a backward graph), and runs each graph as one program of the active
executor: fused kernels around PyTorch's CPU kernels on the host runtime, one StableHLO module
on the PJRT runtime. A graph's program is planned once per structure and cached with fused
eager mode's programs. :func:`compile_metrics` counts graphs compiled, recompiles and why.
"""

from .backend import tpu_backend
from .stats import compile_metrics, reset_compile_metrics

__all__ = ["compile_metrics", "reset_compile_metrics", "tpu_backend"]
