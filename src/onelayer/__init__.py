"""onelayer: the parts of one Transformer layer, built from scratch for 一层 Transformer."""

from onelayer.activations import ACTIVATIONS, gelu, get_activation, relu
from onelayer.ffn import FeedForward, FFNTrace, ffn_parameter_formula, trace_ffn
from onelayer.params import count_parameters
from onelayer.runtime import glue, setup

__all__ = [
    "ACTIVATIONS",
    "FFNTrace",
    "FeedForward",
    "count_parameters",
    "ffn_parameter_formula",
    "gelu",
    "glue",
    "get_activation",
    "relu",
    "setup",
    "trace_ffn",
]
