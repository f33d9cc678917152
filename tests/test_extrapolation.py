"""evaluate.same_window_sweep: TNN's Table 10 measured on the same windows at every length."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tnn_core.models import ModelConfig, build_model
from tnn_core.operators.config import OperatorConfig
from tnn_core.training.evaluate import same_window_sweep
from tnn_core.training.tasks import CharLMConfig, CharLMTask, DigitsTask

TEXT = ("the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor "
        "jugs. " * 80).encode()


class Bigram(nn.Module):
    """Logits from the current token only: blind to context, so any difference between
    factors in ``metric_last`` can only come from different targets."""

    def __init__(self, vocab: int):
        super().__init__()
        self.table = nn.Embedding(vocab, vocab)
        self.config = ModelConfig(task="lm", vocab_size=vocab, dim=8, layers=1,
                                  operator=OperatorConfig(causal=True))  # sizes the batches

    def forward(self, tokens):  # (B, n) -> (B, n, V)
        return self.table(tokens)


@pytest.fixture(scope="module")
def task():
    return CharLMTask.from_bytes(TEXT, "fox.txt", CharLMConfig(seq_len=16))


def test_last_positions_are_the_same_targets_at_every_factor(task):
    torch.manual_seed(0)
    rows = same_window_sweep(Bigram(task.vocab_size), task, factors=(1, 2, 4))
    assert [r["length"] for r in rows] == [16, 32, 64]
    assert {r["last"].sequences for r in rows} == {task.evaluation_span() // 64}  # one set
    last = [r["last"].metric for r in rows]
    assert last == pytest.approx([last[0]] * 3, rel=1e-6)
    assert rows[0]["all"].metric == pytest.approx(rows[0]["last"].metric, rel=1e-6)
    assert rows[2]["all"].loss_mean != pytest.approx(rows[2]["last"].loss_mean, rel=1e-6)


def test_matches_a_direct_computation_on_the_window_suffix(task):
    torch.manual_seed(1)
    config = ModelConfig(vocab_size=task.vocab_size, dim=16, layers=1, task="lm",
                         operator=OperatorConfig(kind="tno", causal=True))
    model = build_model(config)
    rows = same_window_sweep(model, task, factors=(1, 3))
    tokens, targets = task.evaluation_set(48)  # (W, 48): the windows at the longest factor
    with torch.no_grad():
        logits = model(tokens)  # (W, 48, V)
    last = F.cross_entropy(logits[:, -16:].reshape(-1, logits.shape[-1]),
                           targets[:, -16:].reshape(-1), reduction="none").reshape(-1, 16)
    assert rows[1]["last"].loss_mean == pytest.approx(last.mean().item(), rel=1e-5)
    assert rows[1]["last"].metric == pytest.approx(last.mean().item() / math.log(2), rel=1e-5)
    assert rows[1]["last"].loss == pytest.approx(last.sum(1).double().numpy(), rel=1e-5)


def test_refuses_a_classification_task():
    with pytest.raises(ValueError, match="language-model task"):
        same_window_sweep(nn.Linear(1, 1), DigitsTask(), factors=(1,))


def test_the_command_line_refuses_bad_factors_and_classifiers(tmp_path, capsys):
    from tnn_core.training.evaluate import main
    shipped = "checkpoints/digits-tno.safetensors"
    assert main([shipped, "--same-windows", "1,x"]) == 2
    assert "comma-separated integers" in capsys.readouterr().err
    assert main([shipped, "--same-windows", "1,2"]) == 2
    assert "language-model task" in capsys.readouterr().err
