"""The demo: a small Llama-style decoder trained on tpu, compared with the same run on CPU.
Run it with ``python -m torch_tpu.demo``."""
