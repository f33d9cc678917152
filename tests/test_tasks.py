"""tnn_core.tasks: seeded generators, shapes, labels checked independently, honest splits."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
import torch

from tnn_core.training.tasks import (
    IGNORE,
    TASKS,
    CharLMConfig,
    CharLMTask,
    get_task,
    task_from_info,
    task_shape,
)
from tnn_core.training.tasks.charlm import stdlib_files
from tnn_core.training.tasks.listops import ListOpsTask

SMALL = {  # fast settings per task
    "charlm": {"seq_len": 64, "max_bytes": 200_000},
    "listops": {"seq_len": 64, "max_depth": 3, "val_size": 256},
    "digits": {"size": 8},
    "recall": {"seq_len": 48},
}


@pytest.fixture(scope="module")
def tasks():
    return {name: get_task(name, SMALL[name]) for name in TASKS}


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("name", list(TASKS))
def test_batches_are_deterministic_by_seed(tasks, name):
    task = tasks[name]
    a = task.batch("train", 6, gen(0))
    b = task.batch("train", 6, gen(0))
    c = task.batch("train", 6, gen(1))
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not torch.equal(a[0], c[0])
    v1, v2 = task.validation(4, 2), task.validation(4, 2)
    assert all(torch.equal(x, y) for p, q in zip(v1, v2, strict=True)
               for x, y in zip(p, q, strict=True))


@pytest.mark.parametrize("name", list(TASKS))
def test_shapes_and_ranges(tasks, name):
    task = tasks[name]
    tokens, targets = task.batch("train", 5, gen(3))
    assert tokens.dtype == targets.dtype == torch.long
    assert tokens.shape == (5, task.seq_len)
    assert 0 <= tokens.min() and tokens.max() < task.vocab_size
    if task.kind == "lm":
        assert targets.shape == (5, task.seq_len)
        kept = targets[targets != IGNORE]
        assert kept.numel() > 0 and 0 <= kept.min() and kept.max() < task.vocab_size
    else:
        assert targets.shape == (5,)
        assert 0 <= targets.min() and targets.max() < task.num_classes
    assert 0 < task.chance
    assert task.baselines()["uniform"] == task.chance
    assert task_from_info(task.info()).info() == task.info()


@pytest.mark.parametrize("name", ["charlm", "listops", "recall"])
def test_longer_length_extrapolates(tasks, name):
    task = tasks[name]
    tokens, targets = task.batch("val", 2, gen(0), length=2 * task.seq_len)
    assert tokens.shape == (2, 2 * task.seq_len)
    assert task.validation(2, 1, length=3 * task.seq_len)[0][0].shape == (2, 3 * task.seq_len)


def test_digits_length_is_fixed(tasks):
    with pytest.raises(ValueError, match="length must be 64 for task digits"):
        tasks["digits"].batch("train", 2, gen(0), length=128)


# -- ListOps ------------------------------------------------------------------------------
def independent_value(text: str) -> int:
    """Evaluate a ListOps token string with a stack (written apart from the generator)."""
    stack: list[list] = []
    result = None
    for token in text.split():
        if token.startswith("["):
            stack.append([token[1:]])
        elif token == "]":
            op, *args = stack.pop()
            if op == "MIN":
                value = min(args)
            elif op == "MAX":
                value = max(args)
            elif op == "MED":
                value = int(statistics.median(args))  # LRA: int(np.median(args))
            elif op == "SM":
                value = sum(args) % 10
            else:
                raise AssertionError(f"unknown operator {op}")
            if stack:
                stack[-1].append(value)
            else:
                result = value
        else:
            stack[-1].append(int(token))
    assert not stack
    return result


def test_listops_labels_match_an_independent_evaluator(tasks):
    task = tasks["listops"]
    tokens, labels = task.batch("train", 300, gen(5))
    texts = [ListOpsTask.decode(row) for row in tokens]
    assert [independent_value(t) for t in texts] == labels.tolist()
    ops = {t.split()[0] for t in texts}
    assert ops == {"[MIN", "[MAX", "[MED", "[SM"}
    assert any(t.count("[") >= 3 for t in texts)  # nesting happens


def test_listops_median_follows_lra():
    assert independent_value("[MED 1 2 4 8 ]") == 3
    from tnn_core.training.tasks.listops import evaluate_tree
    assert evaluate_tree(("[MED", [8, 1, 4, 2])) == 3  # floor of (2 + 4) / 2
    assert evaluate_tree(("[MED", [1, 2])) == 1  # floor(1.5)
    assert evaluate_tree(("[MED", [9, 0, 5])) == 5
    assert evaluate_tree(("[SM", [9, 8, ("[MAX", [3, 7])])) == 4


def test_listops_training_never_yields_held_out_expressions(tasks):
    task = tasks["listops"]
    held_out = task.held_out()
    tokens, _ = task.batch("train", 2000, gen(9))
    seen = {tuple(ListOpsTask.decode(row).split()) for row in tokens}
    assert not seen & held_out
    val_tokens, _ = task.validation(64, 4)[0]
    assert {tuple(ListOpsTask.decode(r).split()) for r in val_tokens} <= held_out
    assert 0.1 <= task.baselines()["majority"] < 0.5


def test_listops_expressions_fit_and_are_padded(tasks):
    task = tasks["listops"]
    tokens, _ = task.batch("train", 200, gen(2))
    lengths = (tokens != 0).sum(1)
    assert lengths.max() <= task.seq_len
    for row, length in zip(tokens, lengths, strict=True):  # padding only at the end
        assert (row[length:] == 0).all()


# -- digits ------------------------------------------------------------------------------
def test_digits_are_sklearns_images(tasks):
    from sklearn.datasets import load_digits

    task = tasks["digits"]
    data = load_digits()
    assert len(data.target) == 1797
    val, train = task.indices("val"), task.indices("train")
    assert not set(val.tolist()) & set(train.tolist())
    assert len(val) + len(train) == 1797 and len(val) == 360
    batches = task.validation(100, 10)
    tokens = torch.cat([b[0] for b in batches])
    labels = torch.cat([b[1] for b in batches])
    assert len(labels) == 360  # the whole validation set, once
    np.testing.assert_array_equal(tokens.numpy(), data.images[val.numpy()].reshape(360, 64))
    np.testing.assert_array_equal(labels.numpy(), data.target[val.numpy()])


def test_digits_file_holds_exactly_load_digits():
    """load_images reads sklearn's file without importing sklearn: every image and label."""
    from sklearn.datasets import load_digits

    from tnn_core.training.tasks.digits import load_images

    data = load_digits()
    tokens, labels = load_images(8)
    np.testing.assert_array_equal(tokens.numpy(), data.images.reshape(1797, 64))
    np.testing.assert_array_equal(labels.numpy(), data.target)


def test_digits_upsampled_to_32():
    task = get_task("digits", {"size": 32})
    tokens, labels = task.batch("train", 4, gen(0))
    assert task.seq_len == 1024 and tokens.shape == (4, 1024)
    assert 0 <= tokens.min() and tokens.max() <= 16
    with pytest.raises(ValueError, match=r"size must be one of \(8, 32\); got 16"):
        get_task("digits", {"size": 16})


# -- recall ------------------------------------------------------------------------------
def test_recall_targets_are_the_values_of_the_asked_keys(tasks):
    task = tasks["recall"]
    c = task.config
    tokens, targets = task.batch("train", 20, gen(4))
    for row, target in zip(tokens.tolist(), targets.tolist(), strict=True):
        pairs = dict(zip(row[0 : 2 * c.num_pairs : 2], row[1 : 2 * c.num_pairs : 2],
                         strict=True))
        assert len(pairs) == c.num_pairs  # distinct keys
        asked = [i for i, t in enumerate(target) if t != IGNORE]
        assert len(asked) == c.num_queries
        for i in asked:
            assert target[i] == pairs[row[i]] == row[i + 1]  # the value, also the next token
    assert task.chance == 1 / c.num_values


# -- charlm ------------------------------------------------------------------------------
def test_charlm_splits_the_stdlib_by_file(tasks):
    task = tasks["charlm"]
    assert task.train_files and task.val_files
    assert not set(task.train_files) & set(task.val_files)
    for path in task.train_files + task.val_files:
        parts = path.split("/")
        assert "site-packages" not in parts and "test" not in parts and "tests" not in parts
    assert task.chance == pytest.approx(np.log2(task.vocab_size))
    assert task.baselines()["unigram"] < task.chance
    tokens, targets = task.batch("train", 3, gen(0))
    assert torch.equal(tokens[:, 1:], targets[:, :-1])  # next-character targets


def test_stdlib_files_skip_tests_and_site_packages(tmp_path):
    for rel in ("a.py", "pkg/b.py", "test/c.py", "pkg/tests/d.py", "site-packages/e.py",
                "idlelib/idle_test/f.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n" * 10)
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe not utf-8")
    names = [p for p, _ in stdlib_files(10_000_000, str(tmp_path))]
    assert names == ["a.py", "pkg/b.py"]


TEXT = ("The quick brown fox jumps over the lazy dog. " * 200).encode()


def test_charlm_from_bytes_splits_contiguously():
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=32))
    train, val = task._data["train"], task._data["val"]
    assert torch.equal(torch.cat([train, val]), task.encode(TEXT.decode()))
    assert len(val) == len(TEXT) - int(len(TEXT) * 0.9)
    assert "contiguous" in task.describe()
    rebuilt = task_from_info(task.info(), data=TEXT)
    assert rebuilt.vocab == task.vocab
    with pytest.raises(ValueError, match="does not hold; give that text again"):
        task_from_info(task.info())
    with pytest.raises(ValueError, match=r"the text given \(SHA-256 [0-9a-f]{12}…\) is not the "
                                         r"one this model was trained on, 'fox.txt'"):
        task_from_info(task.info(), data=TEXT + b" and more")


def test_a_charlm_task_info_never_names_a_file_to_read(tmp_path, monkeypatch):
    """A legacy ``settings.text`` path (or any path) is dropped, never opened: the model
    asks for its text instead. The path is a real file here, so opening it would work."""
    import builtins
    import io

    secret = tmp_path / "secret.txt"
    secret.write_bytes(TEXT)
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=32))
    legacy = {**task.info(), "settings": {**task.info()["settings"], "text": str(secret)},
              "source": {"kind": "file", "name": "secret.txt", "sha256": "0" * 64}}
    opened = []
    real_open, real_io_open = builtins.open, io.open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy)
    assert task_shape(legacy).vocab_size == task.vocab_size
    with pytest.raises(ValueError, match="'secret.txt', which the checkpoint does not hold"):
        task_from_info(legacy)
    monkeypatch.setattr(builtins, "open", real_open)
    monkeypatch.setattr(io, "open", real_io_open)
    assert str(secret) not in opened


def test_a_reordered_or_oversized_vocabulary_is_refused():
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=32))
    info = task.info()
    shuffled = {**info, "vocab": info["vocab"][::-1]}
    with pytest.raises(ValueError, match="vocab must be in code-point order"):
        task_shape(shuffled)
    small = {**info, "settings": {**info["settings"], "max_vocab": 4}}
    with pytest.raises(ValueError, match=r"at most max_vocab - 1 = 3 distinct characters"):
        task_shape(small)


def test_a_text_for_a_task_without_one_is_refused():
    with pytest.raises(ValueError, match="task listops has no text"):
        task_from_info(get_task("listops", {"seq_len": 64}).info(), data=TEXT)


def test_charlm_maps_unseen_characters_to_unk():
    task = CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=32))
    ids = task.encode("fox€")
    assert ids[-1] == 0 and (ids[:-1] > 0).all()


@pytest.mark.parametrize("data, message", [
    (b"caf\xe9 au lait " * 200, r"not valid UTF-8 \(byte 0xe9 at offset 3"),
    (b"text\x00with NULs " * 200, "looks binary .*NUL bytes"),
    (bytes(range(1, 32)) * 100, "looks binary: .* control characters"),
    (b"short", "at least 1,000 bytes; got 5"),
    (b"a" * (20 * 2**20 + 1), "at most 20,971,520 bytes; got 20,971,521"),
])
def test_from_bytes_rejects_binary_and_non_utf8(data, message):
    with pytest.raises(ValueError, match=message):
        CharLMTask.from_bytes(data, "upload.bin")


def test_from_bytes_needs_room_for_a_window():
    with pytest.raises(ValueError, match="needs at least seq_len"):
        CharLMTask.from_bytes(b"x" * 1500, "tiny.txt", CharLMConfig(seq_len=512))


def test_unknown_task_and_settings_raise():
    with pytest.raises(ValueError, match="task must be one of"):
        get_task("sorting")
    with pytest.raises(ValueError, match=r"unknown ListOpsConfig fields \['depth'\]"):
        get_task("listops", {"depth": 2})
    with pytest.raises(ValueError, match="num_queries must be an integer in"):
        get_task("recall", {"num_pairs": 4, "num_queries": 5})
