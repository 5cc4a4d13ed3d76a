"""Tiny models of every architecture, made from configs alone (no downloads), and inputs that
fit each model's modality."""

from __future__ import annotations

import inspect

import torch

# Model heads in order of preference: the first one a model type has is the one swept. Those
# with labels give a loss, so the sweep also runs a training step.
HEADS = [
    ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "causal_lm"),
    ("MODEL_FOR_MASKED_LM_MAPPING_NAMES", "masked_lm"),
    ("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "seq2seq_lm"),
    ("MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "speech_seq2seq"),
    ("MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "sequence_classification"),
    ("MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "image_classification"),
    ("MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "audio_classification"),
    ("MODEL_FOR_CTC_MAPPING_NAMES", "ctc"),
    ("MODEL_MAPPING_NAMES", "base"),
]

BATCH, SEQ, DECODER_SEQ, IMAGE, AUDIO_SAMPLES = 2, 8, 4, 32, 16000

# Config attributes the shrinker sets, by meaning. Only attributes the config already has are
# touched, and only downwards.
LAYERS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers",
          "decoder_layers", "num_decoder_layers", "num_encoder_layers", "depth")
WIDTHS = ("hidden_size", "d_model", "n_embd", "embed_dim", "dim", "hidden_dim", "d_embed",
          "projection_dim", "embedding_size", "word_embed_proj_dim")
FFN = ("intermediate_size", "ffn_dim", "d_ff", "encoder_ffn_dim", "decoder_ffn_dim", "n_inner",
       "hidden_dim_ffn", "mlp_dim")
HEADS_ATTRS = ("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads",
               "decoder_attention_heads", "n_heads")
SIZES = {"layers": 2, "width": 32, "ffn": 64, "heads": 4, "head_dim": 8, "kv_heads": 2,
         "image_size": IMAGE, "positions": 64}


def mappings():
    from transformers.models.auto import modeling_auto

    return {name: getattr(modeling_auto, name) for name, _ in HEADS}


def choose_head(model_type: str) -> tuple[str, str] | None:
    """(class name, head kind) of the head swept for `model_type`, or None."""
    found = mappings()
    for mapping_name, kind in HEADS:
        class_name = found[mapping_name].get(model_type)
        if isinstance(class_name, (list, tuple)):
            class_name = class_name[0]
        if class_name:
            return class_name, kind
    return None


# How far to shrink: "tiny" shrinks everything; "shallow" only the layer count, the image
# size and the vocabulary, for architectures whose widths are tied together in ways the
# generic shrinker cannot know (per-stage lists, grouped convolutions); "shallow_full_images"
# the same at the configured image size, for those whose windows or patches need it (Swin);
# "configured" only the vocabulary, for models that are small as configured. The sweep tries
# them in this order.
LEVELS = ("tiny", "shallow", "shallow_full_images", "configured")
VOCAB = 1024
MAX_CONFIGURED_PARAMETERS = 15_000_000


def shrink(config, level: str = "tiny") -> None:
    """Makes `config` (and its sub-configs) small, in place."""
    from transformers import PretrainedConfig

    def set_smaller(names, value):
        for name in names:
            current = getattr(config, name, None)
            if isinstance(current, int) and not isinstance(current, bool) and current > value:
                try:
                    setattr(config, name, value)
                except (AttributeError, ValueError, TypeError):
                    pass

    shrink_vocabulary(config)
    if level != "configured":
        set_smaller(LAYERS, SIZES["layers"])
    if level == "tiny":
        set_smaller(WIDTHS, SIZES["width"])
        set_smaller(FFN, SIZES["ffn"])
        set_smaller(HEADS_ATTRS, SIZES["heads"])
        set_smaller(("num_key_value_heads", "multi_query_group_num"), SIZES["kv_heads"])
        if isinstance(getattr(config, "head_dim", None), int):
            config.head_dim = SIZES["head_dim"]
        set_smaller(("max_source_positions",), 16)
    if level in ("tiny", "shallow"):
        set_smaller(("image_size", "img_size"), SIZES["image_size"])
    for name, value in vars(config).copy().items():
        # Lists sized by the layer count (layer_types, per-layer windows) follow it.
        if isinstance(value, list) and len(value) > SIZES["layers"] and name.startswith("layer"):
            setattr(config, name, value[: SIZES["layers"]])
        if isinstance(value, float) and ("drop" in name or ("mask" in name and "prob" in name)):
            # Dropout, layerdrop, SpecAugment masking: random (masking draws from NumPy), so
            # off, for training steps that are deterministic on both devices.
            setattr(config, name, 0.0)
        if isinstance(value, PretrainedConfig):
            shrink(value, level)


def shrink_vocabulary(config) -> None:
    """A smaller vocabulary (embeddings and LM heads dominate small models' memory), with the
    special token ids that pointed past it moved inside."""
    vocab = getattr(config, "vocab_size", None)
    if not isinstance(vocab, int) or vocab <= VOCAB:
        return
    try:
        config.vocab_size = VOCAB
    except (AttributeError, ValueError, TypeError):
        return
    for name, value in vars(config).copy().items():
        if name.endswith("token_id") and isinstance(value, int) and value >= VOCAB:
            setattr(config, name, VOCAB - 1 - (value % 8))


def tiny_model(model_type: str, level: str = "tiny"):
    """(model, head kind) of a small random-weight `model_type` model, on CPU."""
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    choice = choose_head(model_type)
    if choice is None:
        raise LookupError("no model class for this config")
    class_name, kind = choice
    config = CONFIG_MAPPING[model_type]()
    shrink(config, level)
    if hasattr(config, "num_labels"):
        config.num_labels = 3
    model_class = getattr(transformers, class_name)
    if level == "configured":
        with torch.device("meta"):
            parameters = sum(p.numel() for p in model_class(config).parameters())
        if parameters > MAX_CONFIGURED_PARAMETERS:
            raise RuntimeError(f"{parameters / 1e6:.0f}M parameters as configured; "
                               "the generic shrinker could not make it smaller")
    torch.manual_seed(0)
    model = model_class(config)
    return model, kind


def _vocab(config) -> int:
    vocab = getattr(config, "vocab_size", None) or getattr(
        getattr(config, "text_config", None), "vocab_size", None)
    return min(int(vocab), 1000) if vocab else 100


def _vision_config(config):
    return getattr(config, "vision_config", None) or config


def make_inputs(model, kind: str) -> dict:
    """Inputs (and labels when the head has a loss) for `model`, made on CPU from a seed."""
    config = model.config
    parameters = inspect.signature(model.forward).parameters
    generator = torch.Generator().manual_seed(1)
    inputs: dict = {}
    vocab = _vocab(config)
    if "input_ids" in parameters and kind not in ("image_classification",):
        inputs["input_ids"] = torch.randint(3, vocab, (BATCH, SEQ), generator=generator)
        if "attention_mask" in parameters:
            inputs["attention_mask"] = torch.ones(BATCH, SEQ, dtype=torch.long)
    if "pixel_values" in parameters and "input_ids" not in inputs or kind == "image_classification":
        vision = _vision_config(config)
        channels = getattr(vision, "num_channels", 3)
        size = getattr(vision, "image_size", IMAGE)
        size = size[0] if isinstance(size, (list, tuple)) else size
        inputs["pixel_values"] = torch.randn(BATCH, channels, size, size, generator=generator)
    if "input_values" in parameters:
        inputs["input_values"] = torch.randn(BATCH, AUDIO_SAMPLES, generator=generator)
    if "input_features" in parameters:
        mels = getattr(config, "num_mel_bins", 80)
        frames = 2 * getattr(config, "max_source_positions", 16)
        inputs["input_features"] = torch.randn(BATCH, mels, frames, generator=generator)
    if kind in ("seq2seq_lm", "speech_seq2seq") or (
            "decoder_input_ids" in parameters and getattr(config, "is_encoder_decoder", False)):
        start = getattr(config, "decoder_start_token_id", None) or 0
        decoder = torch.randint(3, vocab, (BATCH, DECODER_SEQ), generator=generator)
        decoder[:, 0] = start
        inputs["decoder_input_ids"] = decoder
    if not inputs:
        raise LookupError(f"no known input among {list(parameters)[:6]}")
    if "labels" in parameters:
        labels = labels_for(kind, inputs, config, generator)
        if labels is not None:
            inputs["labels"] = labels
    return inputs


def labels_for(kind, inputs, config, generator):
    if kind in ("causal_lm", "masked_lm"):
        return inputs["input_ids"].clone() if "input_ids" in inputs else None
    if kind in ("seq2seq_lm", "speech_seq2seq"):
        return torch.randint(3, _vocab(config), (BATCH, DECODER_SEQ), generator=generator)
    if kind in ("sequence_classification", "image_classification", "audio_classification"):
        return torch.randint(0, getattr(config, "num_labels", 2), (BATCH,), generator=generator)
    if kind == "ctc":
        return torch.randint(1, min(_vocab(config), 30), (BATCH, 3), generator=generator)
    return None
