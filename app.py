"""Toeplitz Lab: the frame. Navigation over the pages and the shared sidebar.

Run with `make run` (or `streamlit run app.py`). Pages hold layout only; every
computation comes from `tnn_core.lab` (one unit per page), cached in `pages/_ui/memo.py`.
The first visit starts the server's warm-up (`pages/_ui/warmup.py`), which prepares what
later visits need while nobody waits.
"""

import streamlit as st
import torch

from pages._ui import checkpoint_views, controls, timing, warmup
from tnn_core.lab.common.server import keep_freed_memory

keep_freed_memory()  # glibc keeps freed memory: no page faults per large tensor (idempotent)
st.set_page_config(page_title="Toeplitz Lab", page_icon=":material/grid_on:", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Welcome", icon=":material/home:", default=True),  # at /
    st.Page("pages/lessons.py", title="Lessons", icon=":material/school:", url_path="lessons"),
    st.Page("pages/basics.py", title="Toeplitz basics", icon=":material/grid_on:",
            url_path="basics"),
    st.Page("pages/decomposition.py", title="Decomposition", icon=":material/splitscreen:",
            url_path="decomposition"),
    st.Page("pages/compare.py", title="Compare A/B", icon=":material/compare:",
            url_path="compare"),
    st.Page("pages/frequency.py", title="Frequency and causality", icon=":material/waves:",
            url_path="frequency"),
    st.Page("pages/speed.py", title="Speed", icon=":material/speed:", url_path="speed"),
    st.Page("pages/train.py", title="Train", icon=":material/model_training:",
            url_path="train"),
    st.Page("pages/inspect.py", title="Inspect checkpoint", icon=":material/search:",
            url_path="inspect"),
    st.Page("pages/compress.py", title="Compress", icon=":material/compress:",
            url_path="compress"),
]

page = st.navigation(PAGES)
controls.link_notice(page.url_path)  # link values the page cannot use are listed here, on top
with st.sidebar:
    st.markdown("**Toeplitz Lab**")
    devices = ["auto", "cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    controls.control(st.selectbox, controls.fields.DEVICE, options=devices)
    controls.control(st.number_input, controls.fields.SEED, step=1)

if not st.config.get_option("global.appTest"):  # tests run their pages one at a time
    warmup.start(checkpoint_views.warm_up, timing.TIMER)
page.run()
