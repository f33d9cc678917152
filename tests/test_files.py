"""tnn_core.files.read_bounded: regular files only, never more than limit + 1 bytes read."""

import os
import socket
import threading

import pytest

from tnn_core.files import FileRefused, exclusive_output, read_bounded


def test_reads_a_regular_file_up_to_its_limit(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 1000)
    assert read_bounded(path, 1000) == b"x" * 1000
    assert read_bounded(path, 5000) == b"x" * 1000
    (tmp_path / "empty").write_bytes(b"")
    assert read_bounded(tmp_path / "empty", 0) == b""


def test_a_file_one_byte_above_the_limit_is_refused(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(FileRefused, match=r"plan .*a\.bin is larger than the limit of 1,000"):
        read_bounded(path, 1000, "plan")


def test_links_are_followed_and_their_target_checked(tmp_path):
    target = tmp_path / "target.txt"
    target.write_bytes(b"hello")
    (tmp_path / "link").symlink_to(target)
    assert read_bounded(tmp_path / "link", 10) == b"hello"
    (tmp_path / "broken").symlink_to(tmp_path / "missing")
    with pytest.raises(FileRefused, match="link to a missing file"):
        read_bounded(tmp_path / "broken", 10)
    (tmp_path / "to-dir").symlink_to(tmp_path)
    with pytest.raises(FileRefused, match="a directory, not a regular file"):
        read_bounded(tmp_path / "to-dir", 10)


def test_a_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileRefused, match=r"cannot read lesson .*nope\.toml: No such file"):
        read_bounded(tmp_path / "nope.toml", 10, "lesson")


def _refused_within(path, seconds: float = 5.0) -> str:
    """read_bounded(path) in a thread: it must refuse, and within ``seconds``."""
    outcome = {}

    def attempt():
        try:
            read_bounded(path, 100)
            outcome["error"] = None
        except FileRefused as err:
            outcome["error"] = str(err)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"reading {path} hung"
    assert outcome["error"] is not None, f"{path} was read"
    return outcome["error"]


def test_a_fifo_with_no_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    assert "a FIFO" in _refused_within(fifo)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_devices_are_refused_unread(device):
    if not os.path.exists(device):
        pytest.skip(f"{device} is not on this machine")
    assert "character device" in _refused_within(device)


def test_a_directory_and_a_socket_are_refused(tmp_path):
    assert "a directory" in _refused_within(tmp_path)
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        assert "No such device or address" in _refused_within(sock_path)  # ENXIO
    finally:
        server.close()


def test_a_file_that_grows_while_read_stops_at_the_limit(tmp_path, monkeypatch):
    """stat says small, the reads keep coming: at most limit + 1 bytes are taken."""
    path = tmp_path / "growing"
    path.write_bytes(b"x" * 10)
    calls = []
    real_read = os.read

    def endless(fd, count):
        calls.append(count)
        return b"y" * count  # a file that never ends, like /dev/zero behind a regular inode

    monkeypatch.setattr(os, "read", endless)
    with pytest.raises(FileRefused, match="larger than the limit of 5,000,000"):
        read_bounded(path, 5_000_000)
    monkeypatch.setattr(os, "read", real_read)
    assert sum(calls) == 5_000_001


@pytest.mark.parametrize("limit", [-1, 1.5, True, None])
def test_a_bad_limit_is_a_value_error(tmp_path, limit):
    with pytest.raises(ValueError, match="limit must be a non-negative integer"):
        read_bounded(tmp_path, limit)


# -- exclusive_output ----------------------------------------------------------------------
HOLD = """
import sys, time
from tnn_core.files import exclusive_output
with exclusive_output(sys.argv[1]):
    print("holding", flush=True)
    time.sleep(60)
"""


def test_an_output_that_is_an_input_is_refused_by_any_path(tmp_path, monkeypatch):
    source = tmp_path / "model.safetensors"
    source.write_bytes(b"weights")
    (tmp_path / "alias.safetensors").symlink_to(source)
    monkeypatch.chdir(tmp_path)
    for out in (source, tmp_path / "alias.safetensors", "model.safetensors",
                tmp_path / "sub" / ".." / "model.safetensors"):
        with pytest.raises(FileRefused, match="is the input .* it would be replaced"):
            with exclusive_output(out, inputs=(None, source)):
                pass
    assert source.read_bytes() == b"weights"
    with exclusive_output(tmp_path / "other.safetensors", inputs=(source,)) as out:
        assert out.name == "other.safetensors"
    assert not (tmp_path / "other.safetensors.lock").exists()  # removed on a normal exit


def _holder(out):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(out)], cwd=root,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_second_writer_is_refused_until_the_first_ends_even_by_kill_9(tmp_path):
    import signal

    out = tmp_path / "out.safetensors"
    proc = _holder(out)
    try:
        with pytest.raises(FileRefused, match=rf"is being written by another run \(pid "
                                              rf"{proc.pid}\)"):
            with exclusive_output(out):
                pass
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    with exclusive_output(out):  # the kernel released the dead holder's lock
        pass
