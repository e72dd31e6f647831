"""tools.sweeps: the variants a sweep is given on its command line."""

from __future__ import annotations

import pytest

from tools.sweeps import main, parse_variant


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
