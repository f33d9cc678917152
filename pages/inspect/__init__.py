"""The Inspect page's sections (its script is ``pages/inspect.py``): the checkpoint's
header, its upload, another run beside it, writing text, the kernel atlas, one channel,
extrapolation. They call ``tnn_core.lab.inspect``, the shared screen (``pages/_ui``,
``pages/figures``) and each other; no other page imports them."""
