"""Panels, one module per chapter (``ch01`` … ``ch04``, ``ch05_attention``, ``ch06_block``,
``ch07_tiny_gpt``, ``ch08_norm_position``) plus the shared ``frame_player``."""
