"""Panels, one module per chapter (``ch01`` … ``ch05``, ``ch06_attention``, ``ch07_block``,
``ch08_tiny_gpt``) plus the shared ``frame_player``.

Three kinds:

- ``*_frames``: figures drawn in advance behind a slider, linked in the browser, so they
  work in the static HTML book too;
- page panels (``ffn_explorer``, ``activation_explorer``, ``layernorm_explorer``,
  ``block_explorer``, ``query_explorer``; ``attention_map_explorer`` only draws): small
  maths computed by the page's own script
  (``onelayer.book.panels``), in the HTML book and in JupyterLab alike, from weights and
  inputs that Python writes as JSON;
- live ipywidgets panels (``residual_gradient_explorer``, ``norm_position_explorer``,
  ``generation_explorer``) that recompute with PyTorch and need a running kernel; their
  cells carry ``remove-output``, so the HTML book shows no controls that move nothing.

Each chapter draws one figure function for its frames and its live panel, on figures it
owns (never pyplot's).
"""
