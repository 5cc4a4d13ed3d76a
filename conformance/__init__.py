"""Conformance sweeps: PyTorch's OpInfo database (opinfo/) and Hugging Face architectures
(hf/), each run on tpu against PyTorch's CPU results; reports land in reports/."""
