"""OpInfo sweep: every op of PyTorch's OpInfo database, every dtype we track, every sample
input, on tpu vs CPU (forward, and gradients for float32). `python -m conformance.opinfo`."""
