"""The paper's scale: how long a model of the TNN paper's size takes to open, to summarise in
the atlas and to report on this machine, and the memory each takes.

    python -m tnn_core.bench.paper_scale                  # the paper's LM and RoBERTa's kernels
    python -m tnn_core.bench.paper_scale --repeats 5 --json out.json
    python -m tnn_core.bench.paper_scale --scale tiny     # the same steps on tiny models

Models (random weights; what is timed does not depend on what was learned):

    lm        TNN's LM (Appendix D): 6 layers, width 512, expand ratio 3 (1,536 Toeplitz
              channels a layer, 9,216 in all), RPE 6 × 64, causal, λ = 0.99, as a charlm
              checkpoint at n = 512 (the task record of checkpoints/charlm-tno.safetensors,
              its seq_len set to 512): 19.7 M parameters, 79 MB
    roberta   RoBERTa's size as token mixers alone (a kernels-only checkpoint, the
              authors' code imported): 12 layers × 2,304 bidirectional channels, RPE 6 × 64

Steps, each in a fresh child process (``python -c`` through the lab's public functions: this
module sits below the trainer and the lab in the import layers, so it drives them as a
user's script would), timed inside the child, its peak RSS read by ``os.wait4``:

    write     build the model and save it (``training.checkpoint.save``), once
    open      ``checkpoint.load``: what Inspect does first with a file
    atlas     ``load``, then ``lab.common.atlas.atlas_view`` over every channel at n = 512 on
              one torch thread, as Inspect computes a view: the server's part, its peak RSS
              the server's for that checkpoint
    report    ``python -m tnn_core.report FILE``: the whole command, start-up included

Each step runs ``--repeats`` times (default 3); the table gives the median and the range.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCALES = {  # name -> {model: (layers, width, expand, rpe_dim, rpe_layers)}, n, vocab source
    "paper": {"lm": (6, 512, 3, 64, 6), "roberta": (12, 2304, 1, 64, 6), "n": 512},
    "tiny": {"lm": (2, 16, 3, 8, 1), "roberta": (2, 24, 1, 8, 1), "n": 32},
}

WRITE = """
import json, sys
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig, seeded_weights
from tnn_core.training import checkpoint
from tnn_core.training.tasks import kernels_only_info
kind, path, n, (layers, width, expand, rpe_dim, rpe_layers) = (sys.argv[1], sys.argv[2],
    int(sys.argv[3]), json.loads(sys.argv[4]))
operator = OperatorConfig(causal=kind == "lm", decay=0.99, rpe_dim=rpe_dim, rpe_layers=rpe_layers)
if kind == "lm":
    source = checkpoint.read_info(sys.argv[5])
    task = {**source.task, "settings": {**source.task["settings"], "seq_len": n}}
    config = ModelConfig(task="lm", vocab_size=source.model_config.vocab_size, dim=width,
                         layers=layers, expand_ratio=expand, operator=operator)
else:
    task = kernels_only_info(n, {"name": "random weights", "format": "benchmark"})
    config = ModelConfig(task="kernels", dim=width, layers=layers, expand_ratio=expand,
                         operator=operator)
with seeded_weights(0):
    model = build_model(config)
checkpoint.save(path, model, task)
print(json.dumps({"parameters": sum(p.numel() for p in model.parameters()),
                  "channels": sum(op.dim for op in model.operators())}))
"""

OPEN = """
import json, sys, time, torch
torch.set_num_threads(1)
from tnn_core.training.checkpoint import load
start = time.perf_counter()
model, info = load(sys.argv[1])
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

ATLAS = """
import json, sys, time, torch
torch.set_num_threads(1)
from tnn_core.analysis.atlas import default_rank
from tnn_core.lab.common.atlas import ATLAS_BAND, atlas_view
from tnn_core.training.checkpoint import load
model, info = load(sys.argv[1])
start = time.perf_counter()
n = int(sys.argv[2])
atlas = atlas_view(model, n, ATLAS_BAND, default_rank(n))
print(json.dumps({"seconds": time.perf_counter() - start, "rows": len(atlas.channels.layer)}))
"""


def _child(step: str, args: list[str], env: dict) -> tuple[dict, float, float]:
    """(its last stdout line as JSON, or {}; wall seconds from start to exit; peak RSS in MB,
    from ``os.wait4``) of one child ``python ARGS``, the benchmark's ``step``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, *args], stdout=out, stderr=err, cwd=ROOT,
                                   env=env, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        lines = out.read().strip().splitlines()
        if process.returncode:
            raise RuntimeError(f"step {step} failed: {err.read()[-2000:]}")
    last = lines[-1] if lines else ""
    return (json.loads(last) if last.startswith("{") else {}), wall, usage.ru_maxrss / 1024


def _summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "low": min(values), "high": max(values),
            "runs": values}


def measure(kind: str, path: Path, n: int, repeats: int, env: dict) -> dict:
    """Each step of ``kind``'s checkpoint at ``path``, ``repeats`` times: {step: {"seconds":
    summary, "peak_mb": summary}}."""
    steps = {"open": ["-c", OPEN, str(path)], "atlas": ["-c", ATLAS, str(path), str(n)],
             "report": ["-m", "tnn_core.report", str(path)]}
    out = {}
    for step, args in steps.items():
        seconds, peaks = [], []
        for _ in range(repeats):
            answer, wall, peak = _child(step, args, env)
            seconds.append(answer.get("seconds", wall))
            peaks.append(peak)
        out[step] = {"seconds": _summary(seconds), "peak_mb": _summary(peaks)}
    return out


def _machine() -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"), "commit": commit,
            "cpu": platform.processor() or platform.machine(),
            "cores": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "load_average": os.getloadavg()[0]}


def run(scale: str, repeats: int, folder: Path) -> dict:
    """Write both models into ``folder`` and measure each (``measure``)."""
    sizes, n = SCALES[scale], SCALES[scale]["n"]
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}
    results = {"scale": scale, "n": n, "repeats": repeats, "machine": _machine(), "models": {}}
    source = ROOT / "checkpoints" / "charlm-tno.safetensors"
    for kind in ("lm", "roberta"):
        path = folder / f"{scale}-{kind}.safetensors"
        written, wall, peak = _child("write", ["-c", WRITE, kind, str(path), str(n),
                                      json.dumps(sizes[kind]), str(source)], env)
        results["models"][kind] = {**written, "bytes": path.stat().st_size, "write_s": wall,
                                   "write_peak_mb": peak,
                                   "steps": measure(kind, path, n, repeats, env)}
        results["machine"]["load_average_end"] = os.getloadavg()[0]
    return results


def markdown(results: dict) -> str:
    """The results as a table: a row per model and step, median and range of the seconds
    and the peak RSS."""
    lines = [f"{results['machine']['date']}, commit {results['machine']['commit']}, "
             f"{results['machine']['cores']} cores, load average "
             f"{results['machine']['load_average']:.1f} at the start; n = {results['n']}, "
             f"median of {results['repeats']} runs [range].", "",
             "| model | channels | MB on disk | step | s | peak RSS MB |",
             "|---|---:|---:|---|---:|---:|"]
    for kind, model in results["models"].items():
        for step, measured in model["steps"].items():
            s, mb = measured["seconds"], measured["peak_mb"]
            lines.append(f"| {kind} | {model['channels']:,} | {model['bytes'] / 1e6:.1f} | "
                         f"{step} | {s['median']:.2f} [{s['low']:.2f}–{s['high']:.2f}] | "
                         f"{mb['median']:.0f} [{mb['low']:.0f}–{mb['high']:.0f}] |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tnn_core.bench.paper_scale", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", choices=list(SCALES), default="paper")
    p.add_argument("--repeats", type=int, default=3, help="runs of each step (median shown)")
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="write the checkpoints here and keep them (default: a temporary folder)")
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(args.keep or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        results = run(args.scale, args.repeats, folder)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    sys.stdout.write(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
