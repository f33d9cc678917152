"""The Lessons page's parts (its script is ``pages/lessons.py``): each step's figures and
measurements (``steps``). They call ``tnn_core.lab.lesson`` and the shared screen
(``pages/_ui``, ``pages/figures``); no other page imports them."""
