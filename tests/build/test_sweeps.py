"""tools.sweeps: the variants a sweep is given on its command line."""

from __future__ import annotations

import pytest

from tools import make_checkpoints as mc
from tools.sweeps import bilm_variant, char_variant, main, parse_variant


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


PROSE = "In the beginning was the word, and the word was with God. Read the file. " * 40
SMALL_GPT = {
    "max_len": 32,
    "d_model": 16,
    "num_layers": 1,
    "num_heads": 2,
    "d_ff": 32,
    "dropout": 0.0,
}


@pytest.fixture
def short_recipe(monkeypatch):
    """CHAR_ENGLISH on a short text, with 2 windows of 32 a step and a small GPT: a second."""
    english = mc.CHAR_ENGLISH
    monkeypatch.setattr(mc, "prose_text", lambda split, source="all": PROSE)
    monkeypatch.setitem(english, "heldout", {**english["heldout"], "characters": 600, "window": 32})
    monkeypatch.setitem(
        english, "training", {**english["training"], "batch_size": 2, "seq_len": 32}
    )
    gpt = english["models"]["char_gpt_english"]
    monkeypatch.setitem(english["models"], "char_gpt_english", {**gpt, "config": SMALL_GPT})


def test_a_character_variant_trains_the_recipe_with_its_settings_changed(short_recipe):
    gpt = char_variant("char_gpt_english", {"d_model": 8, "lr": 1e-2}, steps=3)
    ratio = SMALL_GPT["d_ff"] // SMALL_GPT["d_model"]
    assert gpt["model"]["d_model"] == 8 and gpt["model"]["d_ff"] == ratio * 8  # the ratio kept
    assert gpt["model"]["num_heads"] == SMALL_GPT["num_heads"] and gpt["lr"] == 1e-2
    assert gpt["steps"] == 3 and gpt["characters"] == 3 * 2 * 32
    lstm = char_variant("char_lstm_english", {"hidden_size": 8, "seq_len": 16}, steps=3)
    assert lstm["model"]["hidden_size"] == 8 and lstm["seq_len"] == 16
    assert lstm["characters"] == 3 * 2 * 16
    for result in (gpt, lstm):  # a vocabulary of a few dozen characters, barely trained
        assert 1 < result["bits_per_char"] < 8, result
    with pytest.raises(ValueError, match="unknown settings"):
        char_variant("char_lstm_english", {"d_model": 16}, steps=3)


def test_the_base_character_variant_trains_the_recipes_model_the_same_each_time(short_recipe):
    """``base`` trains the recipe's model with the recipe's rate, seeded as the recipe is."""
    first = char_variant("char_gpt_english", {}, steps=4)
    rate = mc.CHAR_ENGLISH["models"]["char_gpt_english"]["lr"]
    assert first["model"] == SMALL_GPT and first["lr"] == rate
    again = char_variant("char_gpt_english", {}, steps=4)
    timing = ("ms_per_step",)
    assert {k: v for k, v in again.items() if k not in timing} == {
        k: v for k, v in first.items() if k not in timing
    }  # seeded: the same figures
