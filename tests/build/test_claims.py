"""The lectures' prose states no number or comparison that no cell guards (``tools.claims``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import claims

LECTURE = """# %% [markdown]
# # Lecture 9: a planted lecture
#
# We use Adam (Kingma and Ba, 2015).

# %%
loss = 1.5
print(f"loss {loss:.2f}")

# %% [markdown]
# The RNN beats the LSTM by 0.3 bits per character.

# %%
x = 1

# %% [markdown]
# The loss is below 2.

# %%
assert loss < 2, "the text above says so"

# %%
y = 2

# %% [markdown]
# The GRU beats the LSTM by 0.2 bits per character.

# %%
assert x == 1  # a check of something else: it guards no sentence
"""


def planted(tmp_path: Path, allow: str | None = None) -> list[str]:
    source = tmp_path / "09_planted.py"
    source.write_text(LECTURE, encoding="utf-8")
    folder = tmp_path / "claims"
    folder.mkdir()
    if allow is not None:
        (folder / "09_planted.toml").write_text(allow, encoding="utf-8")
    return claims.unguarded([source], folder)


def test_a_planted_false_sentence_is_listed(tmp_path):
    problems = planted(
        tmp_path,
        '[[allowed]]\nsentence = "We use Adam (Kingma and Ba, 2015)."\n'
        'reason = "published: Kingma and Ba 2015"\n',
    )
    assert problems == [
        "09_planted cell 3: The RNN beats the LSTM by 0.3 bits per character.",
        "09_planted cell 8: The GRU beats the LSTM by 0.2 bits per character.",
    ]


def test_a_sentence_beside_an_assert_of_the_text_is_guarded_and_one_beside_another_is_not(
    tmp_path,
):
    problems = planted(tmp_path)
    assert any("Kingma and Ba" in p for p in problems)
    assert not any("below 2" in p for p in problems)
    assert any("The GRU beats the LSTM" in p for p in problems)


@pytest.mark.parametrize(
    "source, guards",
    [
        ("assert loss < 2", False),
        ('assert loss < 2, "the text below says the loss ends below 2"', True),
        ("# The text above: both runs start alike.\nassert a == b", True),
        ('assert n == 175, "the slide\'s 175 billion"', True),
        ("record('01_rnn_bptt', 'loss', 1.0)", True),
        ("# the text below\nprint(loss)", False),  # a comment, but nothing asserted
        ("%time x = 1\nassert x == 1  # the text: one", True),  # IPython magic: read as text
    ],
)
def test_what_guards_the_text(source, guards):
    assert claims._guards_text(source) is guards


def test_a_stale_or_unreasoned_allow_list_entry_is_an_error(tmp_path):
    stale = '[[allowed]]\nsentence = "A sentence that the lecture does not have, not any more."\n'
    (tmp_path / "a").mkdir()
    problems = planted(tmp_path / "a", stale + 'reason = "history: gone"\n')
    assert any("allow-list entry matches no sentence" in p for p in problems)
    (tmp_path / "b").mkdir()
    unreasoned = '[[allowed]]\nsentence = "We use Adam (Kingma and Ba, 2015)."\nreason = "ok"\n'
    with pytest.raises(ValueError, match="reason must be one of"):
        planted(tmp_path / "b", unreasoned)


def test_maths_code_and_course_references_are_not_claims():
    assert not claims.states_something("See Lecture 3 and `nn.LSTM(128)`, with $h_{t-1}$.")
    assert claims.states_something("It has 128 units.")
    assert claims.states_something("Attention beats recurrence here.")
    assert not claims.states_something("The utmost care.")  # a word, not 'most'


def test_every_lecture_sentence_with_a_number_or_comparison_is_guarded_or_allowed():
    problems = claims.unguarded()
    assert not problems, "\n".join(problems)
