"""The Decomposition page's sections (its script is ``pages/decomposition.py``): the notes
under the figure and the speed at the drawn setting. They call
``tnn_core.lab.decomposition`` and the shared screen (``pages/_ui``, ``pages/figures``); no
other page imports them."""
