"""onelayer: the parts of one Transformer layer, built from scratch for 一层 Transformer."""

from onelayer.activations import (
    ACTIVATIONS,
    gelu,
    gelu_tanh,
    get_activation,
    relu,
    sigmoid,
    silu,
    swiglu,
    swish,
)
from onelayer.ffn import (
    FFN_VARIANTS,
    FeedForward,
    FFNTrace,
    ffn_parameter_formula,
    gated_d_ff,
    trace_ffn,
)
from onelayer.norms import LayerNorm, RMSNorm
from onelayer.params import count_parameters
from onelayer.runtime import glue, setup

__all__ = [
    "ACTIVATIONS",
    "FFNTrace",
    "FFN_VARIANTS",
    "FeedForward",
    "LayerNorm",
    "RMSNorm",
    "count_parameters",
    "ffn_parameter_formula",
    "gated_d_ff",
    "gelu",
    "gelu_tanh",
    "get_activation",
    "glue",
    "relu",
    "setup",
    "sigmoid",
    "silu",
    "swiglu",
    "swish",
    "trace_ffn",
]
