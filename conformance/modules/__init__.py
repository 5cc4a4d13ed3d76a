"""ModuleInfo sweep: every nn module of PyTorch's module database, every dtype it lists, every
module input, on tpu vs CPU (forward, gradients of inputs and parameters, buffers after the
step), in train and eval mode where they differ. `python -m conformance.modules`."""
