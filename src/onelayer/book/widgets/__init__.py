"""ipywidgets panels, one module per chapter (``ch01`` … ``ch07``) plus the shared
``frame_player``.

Two kinds: ``*_explorer`` panels recompute on every change and need a running kernel
(in the HTML book they show their stored state); ``*_frames`` panels show figures drawn in
advance and are linked in the browser, so they also work in the static HTML book. Each
chapter draws one figure function for both kinds, on figures it owns (never pyplot's).
"""
