"""Chapter 6's checks that the page no longer demonstrates: bad input to the block's
bookkeeping raises a clear ValueError (the configuration's own errors are in tests/parts)."""

import pytest
from torch import nn

from onelayer.params import block_parameter_breakdown


def test_parameter_breakdown_rejects_a_module_that_is_not_a_block():
    expected = "block 应为 onelayer.block.TransformerBlock，实际为 Linear"
    with pytest.raises(ValueError, match=expected):
        block_parameter_breakdown(nn.Linear(4, 4))
