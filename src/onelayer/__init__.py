"""onelayer: the parts of one Transformer layer, built from scratch for 一层 Transformer.

The parts live in this package's modules (bottom-up: checks, activations, ffn, norms,
residual, mlp, rope, attention, block, model, params, data, reference, probes, train); each
chapter's experiments in ``onelayer.chapters``; what only the book needs in ``onelayer.book``.
"""

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
from onelayer.attention import CausalSelfAttention
from onelayer.block import BlockConfig, TransformerBlock
from onelayer.ffn import (
    FFN_VARIANTS,
    FeedForward,
    FFNTrace,
    ffn_parameter_formula,
    gated_d_ff,
    trace_ffn,
)
from onelayer.mlp import DeepMLP
from onelayer.model import GPTConfig, TinyGPT, lm_loss
from onelayer.norms import LayerNorm, RMSNorm
from onelayer.params import count_parameters
from onelayer.residual import Residual, norm_sublayer, post_norm, pre_norm, residual_add

__all__ = [
    "ACTIVATIONS",
    "BlockConfig",
    "CausalSelfAttention",
    "DeepMLP",
    "GPTConfig",
    "Residual",
    "TinyGPT",
    "TransformerBlock",
    "lm_loss",
    "norm_sublayer",
    "post_norm",
    "pre_norm",
    "residual_add",
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
    "show_glued",
    "sigmoid",
    "silu",
    "swiglu",
    "swish",
    "trace_ffn",
]


def __getattr__(name: str):
    """``onelayer.setup``, ``onelayer.glue`` and ``onelayer.show_glued`` come from the book
    helpers, loaded on first use so that ``import onelayer`` stays free of IPython and
    matplotlib."""
    if name in ("setup", "glue", "show_glued"):
        from onelayer.book import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'onelayer' has no attribute {name!r}")
