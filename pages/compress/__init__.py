"""The Compress page's sections (its script is ``pages/compress.py``): the conversion of
every layer and its score, and the search for a plan. They call ``tnn_core.lab.compress``
and the shared screen (``pages/_ui``, ``pages/figures``); no other page imports them."""
