"""Computing a lesson measurement (``stored_measurements.Measurement``) on the shipped
checkpoints, as the app computes it, for the store's build and check:

    python -m tnn_core.lab.common.measurement_build --build   # write every store file
    python -m tnn_core.lab.common.measurement_build --check   # exit 1 if one is stale
"""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

from tnn_core.lab.common import stored_measurements
from tnn_core.lab.common.band_ablation import band_ablation
from tnn_core.lab.common.checkpoints import SHIPPED_DIR, open_file, task_from_info
from tnn_core.lab.common.conversion import quick_conversion
from tnn_core.lab.common.decay_pair import decay_pair
from tnn_core.lab.common.measurement_codecs import CODECS

__all__ = ["compute", "compute_shipped", "shipped_digests", "stale", "main"]


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


def compute_shipped(measurement: stored_measurements.Measurement) -> tuple[tuple[str, ...],
                                                                           Any]:
    """(SHA-256 of each checkpoint file, the result) of ``measurement`` on the shipped
    checkpoints, on the first one's task."""
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


def stale(measurements) -> list:
    """The ``measurements`` the store would compute: no file matches today's checkpoints."""
    missing = []
    for measurement in measurements:
        found = stored_measurements.stored_or_computed(
            measurement.kind, shipped_digests(measurement.checkpoints),
            dict(measurement.params), lambda: None)
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
    args = parser.parse_args(argv)
    measurements = stored_measurements.LESSON_MEASUREMENTS
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
