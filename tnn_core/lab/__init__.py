"""What each app page computes: one module per page, plain values in, frozen dataclasses out.

Nothing here imports Streamlit or a plotting library; the pages cache these calls and
only lay out what they return.
"""
