"""What each app page computes: one unit per page, plain values in, frozen dataclasses out.

    basics, compare, compress, decomposition, frequency, inspect, lesson, speed, train

A unit is a module, or a package whose ``__init__`` is its interface; a page imports its
own unit only, which exposes every name the page uses (core names included). A unit
imports the core and ``common`` (what two or more units share), never another unit;
``common`` imports the core and itself (tests/test_layout.py). ``lessons/`` holds the
lesson files the ``lesson`` unit reads.

Nothing here imports Streamlit or a plotting library; the pages cache these calls and
only lay out what they return.
"""
