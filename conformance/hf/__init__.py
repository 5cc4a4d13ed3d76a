"""Hugging Face sweep: every model type the installed transformers can build from a config,
shrunk to a tiny random-weight model, run on tpu and on CPU (forward, and a training step for
models with a trainable head). `python -m conformance.hf`."""
