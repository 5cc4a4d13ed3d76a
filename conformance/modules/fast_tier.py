"""The CI tier of the ModuleInfo sweep. On the host runtime: every entry (about a minute on two
cores). On the PJRT runtime every new program is compiled first (about four minutes for the
whole sweep with a cold cache), so the tier there is the modules models are mostly built from."""

PJRT_FAST_MODULES: set[str] = {
    "nn.Linear", "nn.Bilinear", "nn.Embedding", "nn.Conv1d", "nn.Conv2d", "nn.ConvTranspose2d",
    "nn.BatchNorm2d", "nn.LayerNorm", "nn.RMSNorm", "nn.GroupNorm", "nn.MaxPool2d",
    "nn.AvgPool2d", "nn.AdaptiveAvgPool2d", "nn.GELU", "nn.SiLU", "nn.ReLU", "nn.Softmax",
    "nn.LogSoftmax", "nn.CrossEntropyLoss", "nn.NLLLoss", "nn.MSELoss", "nn.BCEWithLogitsLoss",
    "nn.MultiheadAttention", "nn.TransformerEncoderLayer", "nn.LSTM", "nn.GRU",
    "nn.ZeroPad2d",
}


def in_fast_tier(name: str, runtime: str) -> bool:
    return runtime == "host" or name in PJRT_FAST_MODULES
