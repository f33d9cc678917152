"""Strict construction of the dataclass configs from plain dicts (JSON, checkpoints).

Every config in tnn_core is a frozen dataclass without **kwargs; ``from_dict`` methods
call ``check_fields`` so an unknown key is a ValueError naming it, never ignored.
"""

from __future__ import annotations

from dataclasses import fields

__all__ = ["check_fields", "config_from_dict"]


def check_fields(cls, data: dict) -> dict:
    """Return ``data`` as a new dict, or raise ValueError naming its unknown keys."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {unknown}; allowed: {sorted(known)}")
    return dict(data)


def config_from_dict(cls, data: dict | None):
    """Build the dataclass ``cls`` from a dict (None: all defaults); unknown keys raise."""
    return cls(**check_fields(cls, data or {}))
