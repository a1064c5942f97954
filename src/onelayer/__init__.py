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


def __getattr__(name: str):
    """``onelayer.setup`` and ``onelayer.glue`` come from the book helpers, loaded on first use
    so that ``import onelayer`` stays free of IPython and matplotlib."""
    if name in ("setup", "glue"):
        from onelayer.book import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'onelayer' has no attribute {name!r}")
