"""tools.sweeps: the variants a sweep is given on its command line."""

from __future__ import annotations

import pytest

from tools import make_checkpoints as mc
from tools.sweeps import bilm_variant, main, parse_variant


def test_a_variant_is_key_value_pairs_or_base():
    assert parse_variant("base") == {}
    assert parse_variant("lr=2e-3,dropout=0") == {"lr": 0.002, "dropout": 0}
    assert parse_variant("batch_size=64") == {"batch_size": 64}
    assert isinstance(parse_variant("dropout=0.0")["dropout"], float)
    for bad in ("lr", "=3", "lr=fast"):
        with pytest.raises(ValueError):
            parse_variant(bad)


def test_a_bad_variant_or_setting_stops_before_training(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["bert", "lr=fast"])
    assert stopped.value.code == 2 and "lr=fast" in capsys.readouterr().err


def test_a_bilm_variant_trains_the_recipe_with_its_settings_changed(monkeypatch):
    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran"]] * 20
    monkeypatch.setattr(mc, "english_sentences", lambda split: sentences)
    result = bilm_variant({"lr": 1e-2, "dim": 8, "batch_size": 4, "seq_len": 5}, steps=3)
    assert result["model"] == {"dim": 8, "num_layers": mc.BILM_ENGLISH["model"]["num_layers"]}
    assert (result["lr"], result["batch_size"], result["seq_len"]) == (1e-2, 4, 5)
    assert result["steps"] == 3 and result["tokens"] == 3 * 4 * 5
    assert 1 < result["forward"] < 100 and 1 < result["backward"] < 100  # a vocabulary of 9
    with pytest.raises(ValueError, match="unknown settings"):
        bilm_variant({"dropout": 0.1}, steps=3)
