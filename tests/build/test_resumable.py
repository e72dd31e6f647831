"""tools.resumable: a checkpoint recipe's run, interrupted and run again, ends with the weights
of an uninterrupted run, bit for bit on the CPU; another recipe or code starts afresh."""

from __future__ import annotations

import pytest
import torch

from course.data.chars import random_windows
from course.models.gpt import GPT, GPTConfig
from course.train import fit, linear_warmup_decay
from tools.resumable import RunFile, code_digest, resumable_fit, run_key

STEPS = 30
CONFIG = GPTConfig(vocab_size=17, max_len=12, d_model=16, num_layers=1, num_heads=2, d_ff=32)


class Interrupted(Exception):
    pass


def _train(run: RunFile | None, stop_at: int | None = None) -> tuple[GPT, list[float]]:
    """A tiny GPT with dropout (torch's random state matters) on seeded windows, 30 steps."""
    ids = torch.arange(400) * 7 % 17
    torch.manual_seed(0)
    model = GPT(CONFIG)

    def stop(done: int) -> None:
        if done == stop_at:
            raise Interrupted(done)

    history = resumable_fit(
        model,
        GPT.loss,
        lambda: random_windows(ids, 4, 12, seed=3),
        steps=STEPS,
        lr=3e-3,
        clip_norm=1.0,
        lr_schedule=linear_warmup_decay(5, STEPS),
        run=run,
        desc="tiny",
        on_save=stop,
    )
    return model, history.losses


def _same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    left, right = a.state_dict(), b.state_dict()
    return left.keys() == right.keys() and all(torch.equal(left[k], right[k]) for k in left)


def test_an_interrupted_run_resumed_ends_with_the_uninterrupted_weights(tmp_path, capsys):
    whole, whole_losses = _train(None)
    # the plain loop, with the same optimiser and schedule, gives the same weights too
    ids = torch.arange(400) * 7 % 17
    torch.manual_seed(0)
    plain = GPT(CONFIG)
    fit(plain, GPT.loss, random_windows(ids, 4, 12, seed=3), steps=STEPS, lr=3e-3,
        clip_norm=1.0, lr_schedule=linear_warmup_decay(5, STEPS), progress=False)  # fmt: skip
    assert _same_weights(whole, plain)

    run = RunFile(tmp_path / "tiny.pt", key="recipe-1", save_every=10)
    with pytest.raises(Interrupted):
        _train(run, stop_at=20)
    assert torch.load(run.path, weights_only=False)["done"] == 20
    capsys.readouterr()
    resumed, resumed_losses = _train(run)
    assert "resuming at step 20 of 30" in capsys.readouterr().out
    assert _same_weights(resumed, whole)
    assert resumed_losses == whole_losses


def test_a_run_of_another_recipe_or_code_starts_afresh(tmp_path, capsys):
    old = RunFile(tmp_path / "tiny.pt", key="recipe-1", save_every=10)
    with pytest.raises(Interrupted):
        _train(old, stop_at=10)
    capsys.readouterr()
    changed = RunFile(old.path, key="recipe-2", save_every=10)
    model, losses = _train(changed)
    out = capsys.readouterr().out
    assert "holds a run of another recipe or code (saved at step 10); starting afresh" in out
    assert "resuming" not in out
    whole, whole_losses = _train(None)
    assert _same_weights(model, whole) and losses == whole_losses


def test_a_file_cut_short_starts_afresh(tmp_path, capsys):
    path = tmp_path / "tiny.pt"
    path.write_bytes(b"PK\x03\x04 cut short")
    model, _ = _train(RunFile(path, key="recipe-1", save_every=10))
    assert "cannot be read" in capsys.readouterr().out
    assert _same_weights(model, _train(None)[0])


def test_the_key_changes_with_the_recipe_and_the_code():
    code = code_digest()
    assert run_key("bert", {"steps": 10}, code) != run_key("bert", {"steps": 20}, code)
    assert run_key("bert", {"steps": 10}, code) != run_key("bert", {"steps": 10}, code + "x")
    assert code_digest(extra=[_train]) != code
