"""The CI tier of the Hugging Face sweep: architectures spanning decoder-only, encoder,
encoder-decoder, vision and audio models."""

FAST_MODELS: list[str] = [
    "llama", "gpt2", "mistral", "qwen2",  # decoder-only
    "bert", "roberta", "distilbert",      # encoders
    "t5", "bart",                         # encoder-decoder
    "vit", "convnext", "clip",            # vision
    "wav2vec2", "hubert", "whisper",      # audio
]
