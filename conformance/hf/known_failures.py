"""Every known Hugging Face sweep gap, in one place, each with its reason: model type ->
reason. The CI tier does not count these as regressions; fixing one means deleting it here."""

KNOWN_FAILURES: dict[str, str] = {
    # The generated audio's length comes from ceil() of predicted durations: last-bit
    # differences (kernels run on one thread on the chip's worker, two on CPU) move a
    # duration across an integer, and everything after differs.
    "vits": "data-dependent output length amplifies last-bit differences",
    # Training-mode batch norm over a handful of values makes the tiny models' training step
    # chaotic: moving CPU's pixel values by a relative 1e-7 moves its own loss from 0.75 to
    # 0.73-0.83 (regnet) and from 1.13 to 1.10-1.18 (levit). With batch norm in evaluation
    # mode the same step matches CPU on the PJRT runtime, every gradient within tolerance.
    "regnet": "training step chaotic under last-bit differences (training-mode batch norm)",
    "levit": "training step chaotic under last-bit differences (training-mode batch norm)",
}
