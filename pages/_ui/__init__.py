"""What the pages share, one concern per module; nothing here draws a page on its own.

- ``frame``: app.py's frame around every page, hand-offs between pages, the sidebar's state,
  errors as sentences.
- ``controls``: a control bound to the URL and lockable by a lesson (``control``), and the
  notice listing the link's values a page could not use; ``link_values`` checks them.
- ``memo``: the server-wide memo of every computed view, ``warmup`` the start-up work that
  fills it while the server is quiet.
- ``checkpoints``: this session's checkpoints (shipped, saved, uploaded), loaded once.
- ``checkpoint_views``: Inspect's views of a checkpoint (also drawn by Compress and lessons).
- ``kernels``: the demo kernels and their decompositions.
- ``timing``: timings taken in the background, and pages that wait for them.
- ``charts``, ``kernel_replay``, ``cell_picker``: figures drawn on two or more pages.
- ``streamlit_internals``: the private Streamlit API the app relies on, tested on upgrade.

Pages import the modules they use, never each other.
"""
