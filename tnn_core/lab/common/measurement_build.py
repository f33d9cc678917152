"""Computing a lesson measurement (``stored_measurements.Measurement``) on the shipped
checkpoints, as the app computes it, for the store's build and check; a recurrent fit of a
lesson 6 kernel on the coefficients its step's view gives (``lesson_kernel``):

    python -m tnn_core.lab.common.measurement_build --build   # write every store file
    python -m tnn_core.lab.common.measurement_build --check   # exit 1 if one is stale
    python -m tnn_core.lab.common.measurement_build --build --kind recurrent_fit  # one kind
"""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

import numpy as np

from tnn_core.lab.common import stored_measurements
from tnn_core.lab.common.band_ablation import band_ablation
from tnn_core.lab.common.checkpoints import SHIPPED_DIR, open_file, task_from_info
from tnn_core.lab.common.conversion import quick_conversion
from tnn_core.lab.common.decay_pair import decay_pair
from tnn_core.lab.common.kernel_sources import learned_kernel, preset_kernel
from tnn_core.lab.common.measurement_codecs import CODECS
from tnn_core.lab.common.recurrent_fit import computed_fit, fit_key

__all__ = ["compute", "compute_shipped", "lesson_kernel", "shipped_digests", "digests",
           "stale", "main"]


def compute(kind: str, models: tuple, task, params: dict) -> Any:
    """The measurement ``kind`` of ``models`` on ``task`` at ``params``."""
    if kind == "band_ablation":
        return band_ablation(models[0], task, params["band"])
    if kind == "quick_conversion":
        return quick_conversion(models[0], task, params["band"], params["rank"],
                                params["method"])
    if kind == "decay_pair":
        return decay_pair(models, tuple(params["names"]), task, tuple(params["factors"]))
    raise ValueError(f"kind must be one of {sorted(CODECS)}; got {kind!r}")


def lesson_kernel(kernel: dict) -> np.ndarray:
    """The coefficients [2n-1] of a lesson step's kernel (a ``Measurement.kernel``), as the
    Decomposition figure computes them: a shipped checkpoint's channel (``checkpoint``,
    ``layer``, ``channel``, ``n``) or a preset (``source``, ``n``, ``decay``, ``causal``,
    ``seed``, ``channel``)."""
    if kernel["source"] == "checkpoint":
        model = open_file(SHIPPED_DIR / f"{kernel['checkpoint']}.safetensors").model
        return learned_kernel(model, kernel["n"], kernel["layer"], kernel["channel"])
    return preset_kernel(kernel["source"], kernel["n"], kernel["decay"], kernel["causal"],
                         kernel["seed"], kernel["channel"]).numpy()


def compute_shipped(measurement: stored_measurements.Measurement) -> tuple[tuple[str, ...],
                                                                           Any]:
    """(SHA-256 of each checkpoint file, the result) of ``measurement`` on the shipped
    checkpoints, on the first one's task; for a kernel's fit, (its ``fit_key`` digests, the
    fit computed, never read from the store)."""
    if measurement.kernel:
        coeffs = lesson_kernel(dict(measurement.kernel))
        ladder = tuple(dict(measurement.params)["ladder"])
        return fit_key(coeffs, ladder)[0], computed_fit(coeffs, ladder)
    opened = [open_file(SHIPPED_DIR / f"{name}.safetensors") for name in measurement.checkpoints]
    task = task_from_info(opened[0].info.task)
    result = compute(measurement.kind, tuple(o.model for o in opened), task,
                     dict(measurement.params))
    return tuple(o.digest for o in opened), result


def shipped_digests(names: tuple[str, ...]) -> tuple[str, ...]:
    """SHA-256 of each shipped checkpoint file ``names``."""
    out = []
    for name in names:
        with open(SHIPPED_DIR / f"{name}.safetensors", "rb") as file:
            out.append(hashlib.file_digest(file, "sha256").hexdigest())
    return tuple(out)


def digests(measurement: stored_measurements.Measurement) -> tuple[str, ...]:
    """The SHA-256 keys ``measurement`` has today: of its shipped checkpoint files, or of
    its kernel and the fitting code (``recurrent_fit.fit_key``)."""
    if measurement.kernel:
        coeffs = lesson_kernel(dict(measurement.kernel))
        return fit_key(coeffs, tuple(dict(measurement.params)["ladder"]))[0]
    return shipped_digests(measurement.checkpoints)


def stale(measurements) -> list:
    """The ``measurements`` the store would compute: no file matches today's checkpoints,
    kernels and fitting code."""
    missing = []
    for measurement in measurements:
        found = stored_measurements.stored_or_computed(
            measurement.kind, digests(measurement), dict(measurement.params), lambda: None)
        if found is None:
            missing.append(measurement)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The lesson measurements kept beside the "
                                                 "shipped checkpoints.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--build", action="store_true",
                        help="compute every lesson measurement and write its file")
    action.add_argument("--check", action="store_true",
                        help="list the measurements whose file is missing or stale (exit 1)")
    parser.add_argument("--kind", choices=sorted(CODECS),
                        help="only the measurements of this kind (a recurrent fit's code "
                             "changed: --kind recurrent_fit, seconds instead of minutes)")
    args = parser.parse_args(argv)
    measurements = [m for m in stored_measurements.LESSON_MEASUREMENTS
                    if args.kind in (None, m.kind)]
    if args.check:
        missing = stale(measurements)
        for measurement in missing:
            print(f"missing or stale: {stored_measurements.STORE_DIR / measurement.file_name}")
        return 1 if missing else 0
    for measurement in measurements:
        print(f"wrote {stored_measurements.build(measurement, compute_shipped)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
