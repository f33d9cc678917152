"""Command-line cases run in processes forked from one that has imported torch and tnn_core.

A fresh ``python`` per case paid torch's and tnn_core's imports again (about 2 s of CPU
each). ``CaseServer`` starts one process that imports them and then forks a child per case,
before it has run a single torch operation (so no thread pool is copied). Each child is as a
fresh process after those imports: its own stdout and stderr files, stdin from /dev/null, an
audit hook (``sys.addaudithook``) that logs every ``open``, ``runpy.run_module`` as
``python -m`` runs it (or the code as ``python -c`` does), and its memory counted from its
own start: VmHWM, which a fork resets to the resident size the child starts with
(``ru_maxrss`` would keep the parent's peak). A child's peak growth reads above a fresh
process's for the same work: the pages of the libraries that the parent had touched fault
into the child again (2026-11-25: 6-14 MB for test_budget.py's model passes, 30 MB for a
conversion, which therefore runs in a fresh process).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["CaseServer"]

ROOT = Path(__file__).resolve().parents[1]

SERVER = r"""
import json, os, runpy, sys, time, traceback
import torch, tnn_core.training.evaluate, tnn_core.compress.cli, tnn_core.training.cli

def peak_mb(status):
    status.seek(0)
    for line in status.read().decode().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

def case(request):
    sys.stdin = open(os.devnull)
    os.dup2(sys.stdin.fileno(), 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    opened = []
    def hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
            opened.append(os.path.abspath(os.fsdecode(args[0])))
    status = open("/proc/self/status", "rb", buffering=0)  # opened before the hook
    base = peak_mb(status)
    sys.addaudithook(hook)
    code = 0
    try:
        if request["code"] is None:  # python -m argv[0] argv[1:]
            sys.argv = list(request["argv"])
            runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
        else:  # python -c code argv
            sys.argv = ["-c", *request["argv"]]
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    peak = peak_mb(status)
    with open(request["report"], "w") as f:
        json.dump({"code": code, "grew_mb": peak - base, "opened": sorted(set(opened))}, f)

for line in iter(sys.stdin.readline, ""):
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            case(request)
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    deadline, status = time.monotonic() + request["seconds"], None
    while status is None:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(code)
        elif time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            status = "timeout"
        else:
            time.sleep(0.01)
    print(json.dumps({"status": status}), flush=True)
"""


def short_argv(argv: list[str], width: int = 80) -> str:
    """``argv`` for a failure message: each argument cut to ``width`` characters (a case's
    prompt can be 62,790 of them)."""
    return " ".join(a if len(a) <= width else f"{a[:width]}… ({len(a):,} characters)"
                    for a in argv)


class CaseServer:
    """One importing process; ``run`` forks a child of it per case."""

    def __init__(self, env: dict[str, str]):
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - kept until close
        self._proc = subprocess.Popen([sys.executable, "-c", SERVER], cwd=ROOT, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._log, text=True)

    def run(self, folder: Path, argv: list[str], seconds: float, code: str | None = None
            ) -> tuple[dict, str, str]:
        """``python -m argv[0] argv[1:]`` (or, given ``code``, ``python -c code argv``) in a
        child, ended after ``seconds``: its report (exit code, MB its peak grew, paths
        opened), stdout and stderr, the files of each in ``folder``. A child that raised or
        ran out of time fails the case with its stderr."""
        files = {name: folder / f"case.{name}" for name in ("report", "stdout", "stderr")}
        files["report"].unlink(missing_ok=True)
        request = {name: str(path) for name, path in files.items()}
        request.update(argv=argv, code=code, seconds=seconds)
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        if not answer:
            self._log.seek(0)
            raise RuntimeError(f"the case server ended: {self._log.read().decode()[-2000:]}")
        status = json.loads(answer)["status"]
        stdout, stderr = files["stdout"].read_text(), files["stderr"].read_text()
        shown = short_argv(argv)
        assert status != "timeout", f"{shown} did not end in {seconds} s:\n{stderr[-2000:]}"
        assert status == 0, f"{shown}: the child exited {status}:\n{stderr[-2000:]}"
        return json.loads(files["report"].read_text()), stdout, stderr

    def close(self) -> None:
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()
