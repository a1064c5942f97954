"""Pictures of the book's ideas, drawn by code in one visual language (``canvas``): each
function draws one idea with the chapter's own tensors and returns a ``Diagram``, which a
notebook shows as SVG."""

from onelayer.book.diagrams.activations import (
    activation_switches_diagram,
    dead_unit_diagram,
    product_units_diagram,
)
from onelayer.book.diagrams.attention import (
    attention_diagram,
    causal_mask_diagram,
    head_split_diagram,
    kv_cache_diagram,
    permutation_diagram,
)
from onelayer.book.diagrams.blocks import (
    attention_flops_diagram,
    block_norms_diagram,
    block_parameters_diagram,
    norm_placements_diagram,
    seed_block_diagram,
    stack_dropout_diagram,
)
from onelayer.book.diagrams.book_map import book_map_diagram
from onelayer.book.diagrams.canvas import Diagram
from onelayer.book.diagrams.ffn import (
    ffn_diagram,
    gated_ffn_diagram,
    position_wise_diagram,
    teacher_student_diagram,
)
from onelayer.book.diagrams.gpt import tiny_gpt_diagram, training_loop_diagram
from onelayer.book.diagrams.inside import inside_diagram
from onelayer.book.diagrams.modern import (
    kv_sharing_diagram,
    layer_generations_diagram,
    rope_pairs_diagram,
)
from onelayer.book.diagrams.modern_parts import (
    qk_norm_diagram,
    rope_shift_diagram,
    sliding_window_diagram,
)
from onelayer.book.diagrams.norms import (
    deep_norm_diagram,
    layernorm_geometry_diagram,
    layernorm_jacobian_diagram,
)
from onelayer.book.diagrams.residual import (
    depth_variants_diagram,
    residual_block_diagram,
    residual_stream_diagram,
    unrolled_paths_diagram,
)
from onelayer.book.diagrams.songci import (
    annotated_ci_diagram,
    ci_form_diagram,
    rhyme_arms_diagram,
    sampling_diagram,
    training_step_diagram,
)

__all__ = [
    "Diagram",
    "activation_switches_diagram",
    "dead_unit_diagram",
    "product_units_diagram",
    "depth_variants_diagram",
    "attention_diagram",
    "attention_flops_diagram",
    "block_norms_diagram",
    "block_parameters_diagram",
    "causal_mask_diagram",
    "book_map_diagram",
    "annotated_ci_diagram",
    "ci_form_diagram",
    "deep_norm_diagram",
    "rhyme_arms_diagram",
    "sampling_diagram",
    "training_loop_diagram",
    "ffn_diagram",
    "gated_ffn_diagram",
    "head_split_diagram",
    "inside_diagram",
    "kv_cache_diagram",
    "kv_sharing_diagram",
    "layer_generations_diagram",
    "layernorm_geometry_diagram",
    "layernorm_jacobian_diagram",
    "norm_placements_diagram",
    "permutation_diagram",
    "position_wise_diagram",
    "residual_block_diagram",
    "residual_stream_diagram",
    "qk_norm_diagram",
    "rope_pairs_diagram",
    "rope_shift_diagram",
    "sliding_window_diagram",
    "seed_block_diagram",
    "teacher_student_diagram",
    "stack_dropout_diagram",
    "tiny_gpt_diagram",
    "training_step_diagram",
    "unrolled_paths_diagram",
]
