"""The CI tier of the OpInfo sweep: a fixed sample of OpInfo entries that covers every op the
foundation's tests and the demo model use, plus common ops of each family (pointwise,
reductions, indexing, shape, linear algebra, losses, random, data-dependent)."""

FAST_OPS: set[str] = {
    # Models: embedding, linear layers, attention, normalization, activations, losses.
    "nn.functional.embedding", "nn.functional.embedding_bag", "nn.functional.linear",
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addmv", "addr", "mv", "dot", "vdot", "outer",
    "einsum", "kron", "nn.functional.scaled_dot_product_attention",
    "nn.functional.layer_norm", "nn.functional.rms_norm", "native_layer_norm",
    "nn.functional.batch_norm", "native_batch_norm", "_native_batch_norm_legit",
    "nn.functional.group_norm", "nn.functional.instance_norm", "nn.functional.normalize",
    "softmax", "log_softmax", "logsumexp", "nn.functional.gelu", "nn.functional.silu",
    "nn.functional.relu", "nn.functional.leaky_relu", "nn.functional.elu", "nn.functional.selu",
    "nn.functional.mish", "nn.functional.softplus", "nn.functional.hardtanh",
    "nn.functional.hardswish", "nn.functional.logsigmoid", "nn.functional.glu",
    "nn.functional.dropout", "nn.functional.cross_entropy", "nn.functional.nll_loss",
    "nn.functional.mse_loss", "nn.functional.smooth_l1_loss", "nn.functional.huber_loss",
    "nn.functional.binary_cross_entropy", "nn.functional.binary_cross_entropy_with_logits",
    "nn.functional.kl_div", "nn.functional.triplet_margin_loss",
    "nn.functional.cosine_similarity", "nn.functional.one_hot",
    # Convolution and pooling.
    "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv_transpose2d",
    "nn.functional.max_pool2d", "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool2d",
    "nn.functional.max_unpool2d", "nn.functional.unfold", "nn.functional.pad.constant",
    "nn.functional.pad.reflect", "nn.functional.interpolate.nearest",
    "nn.functional.interpolate.bilinear",
    # Pointwise.
    "add", "sub", "mul", "div.no_rounding_mode", "div.floor_rounding", "pow", "rsqrt", "sqrt",
    "exp", "log", "tanh", "sigmoid", "neg", "abs", "clamp", "clamp_min", "clamp_max", "lerp",
    "addcmul", "addcdiv", "maximum", "minimum", "atan2", "remainder", "fmod", "floor_divide",
    "bitwise_and", "logical_not", "round", "trunc", "sign", "erf", "erfinv", "lgamma",
    "digamma", "nan_to_num", "where", "masked_fill", "eq", "ne", "lt", "le", "gt", "ge",
    "isnan", "isfinite",
    # Reductions and scans.
    "sum", "mean", "amax", "amin", "argmax", "max.reduction_with_dim",
    "min.reduction_with_dim", "prod", "var", "std", "var_mean", "std_mean", "any", "all",
    "median", "mode", "kthvalue", "cumsum", "cumprod", "linalg.vector_norm", "trace", "diff",
    # Indexing, sorting, data-dependent outputs.
    "index_select", "gather", "scatter", "scatter_add", "index_put", "index_add",
    "index_copy", "masked_scatter", "masked_select", "nonzero", "unique", "topk", "sort",
    "argsort", "bucketize", "searchsorted", "histc", "bincount",
    # Shapes and views.
    "cat", "stack", "split", "split_with_sizes", "chunk", "unbind", "transpose", "permute",
    "view", "reshape", "expand", "squeeze", "unsqueeze", "flatten", "contiguous", "clone",
    "narrow", "select", "t", "flip", "roll", "repeat", "tril", "triu", "diagonal",
    "diag_embed", "as_strided", "cross",
    # Creation, random, conversion.
    "arange", "full", "zeros", "ones", "randn", "randint", "rand_like", "bernoulli",
    "multinomial", "normal", "uniform", "zeros_like", "ones_like", "full_like", "new_zeros",
    "new_full", "empty", "empty_like", "to", "fft.fft",
}
