"""Unit tests of course.checks: the values it accepts and every message it gives."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from course import checks
from course.checks import (
    as_numpy,
    assert_close,
    cases,
    expect_dtype,
    expect_ids,
    expect_shape,
    expect_state,
)
from tests.grading.bug_injection import arrays_in
from tests.messages import raises

# --------------------------------------------------------------------------------------------
# as_numpy
# --------------------------------------------------------------------------------------------


def test_as_numpy_detaches_and_copies_tensors():
    tensor = torch.tensor([1.0, 2.0], requires_grad=True)
    array = as_numpy(tensor * 2, "y")
    assert isinstance(array, np.ndarray)
    np.testing.assert_array_equal(array, [2.0, 4.0])


def test_as_numpy_accepts_arrays_lists_and_scalars():
    original = np.arange(3.0)
    assert as_numpy(original, "x") is original
    np.testing.assert_array_equal(as_numpy([[1, 2], [3, 4]], "x"), [[1, 2], [3, 4]])
    assert as_numpy(2.5, "x").shape == ()


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(None, "NoneType"), ("abc", "str"), (b"abc", "bytes"), ({"a": 1}, "dict")],
)
def test_as_numpy_rejects_non_arrays_naming_the_quantity(value, type_name):
    with raises(TypeError, "hs", "array or tensor", type_name):
        as_numpy(value, "hs")


def test_as_numpy_rejects_ragged_lists():
    with raises(TypeError, "probs", "array or tensor", "list"):
        as_numpy([[1.0, 2.0], [3.0]], "probs")


def test_as_numpy_rejects_values_that_numpy_cannot_convert():
    class Unconvertible:
        def __array__(self, dtype=None, copy=None):
            raise TypeError("no")

    with raises(TypeError, r"\bx\b", "array or tensor", "Unconvertible"):
        as_numpy(Unconvertible(), "x")


def test_as_numpy_rejects_objectarrays_in():
    with raises(TypeError, r"\bx\b", "numeric", "ragged"):
        as_numpy([object(), object()], "x")


# --------------------------------------------------------------------------------------------
# expect_shape
# --------------------------------------------------------------------------------------------


def test_expect_shape_binds_named_dimensions():
    assert expect_shape(np.zeros((5, 3)), ("T", "D"), "xs") == {"T": 5, "D": 3}
    assert expect_shape(torch.zeros(4, 4), ("H", "H"), "W") == {"H": 4}
    assert expect_shape([[1, 2, 3]], (1, None), "row") == {}


def test_expect_shape_reports_the_number_of_dimensions():
    with raises(ValueError, "xs", r"2 dimensions \(T, D\)", r"\(5,\)"):
        expect_shape(np.zeros(5), ("T", "D"), "xs")


def test_expect_shape_reports_a_named_dimension_that_disagrees():
    message = (
        "W: dimension 1 (H) should be 3 to match the earlier H, got 4; "
        "expected shape (H, H), got (3, 4)"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        expect_shape(np.zeros((3, 4)), ("H", "H"), "W")


def test_expect_shape_reports_a_fixed_dimension_and_writes_wildcards_as_stars():
    message = "x: expected shape (3, *), got (4, 2) (dimension 0 should be 3, not 4)"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        expect_shape(np.zeros((4, 2)), (3, None), "x")


def test_expect_shape_writes_one_dimensional_shapes_with_a_comma():
    with pytest.raises(ValueError, match=re.escape("expected shape (4,), got (3,)")):
        expect_shape(np.zeros(3), (4,), "b")


def test_expect_shape_rejects_nonarrays_in():
    with raises(TypeError, r"\bb\b", "array or tensor", "NoneType"):
        expect_shape(None, (4,), "b")


# --------------------------------------------------------------------------------------------
# expect_dtype
# --------------------------------------------------------------------------------------------


def test_expect_dtype_accepts_the_given_kinds():
    expect_dtype(np.zeros(2), "f", "x")
    expect_dtype(torch.zeros(2, dtype=torch.int64), "iu", "ids")
    expect_dtype(np.array([True]), "b", "mask")


def test_expect_dtype_names_the_wanted_and_the_given_dtype():
    with raises(TypeError, "xs", "floating point", "int64"):
        expect_dtype(np.arange(3, dtype=np.int64), "f", "xs")
    with raises(TypeError, "targets", "integer", "float32"):
        expect_dtype(torch.zeros(2), "iu", "targets")
    with raises(TypeError, "flags", "boolean", "float64"):
        expect_dtype(np.zeros(1), "b", "flags")


def test_expect_dtype_falls_back_to_the_kind_code_for_other_kinds():
    with raises(TypeError, r"\bz\b", "a c array", "float64"):
        expect_dtype(np.zeros(1), "c", "z")


# --------------------------------------------------------------------------------------------
# assert_close
# --------------------------------------------------------------------------------------------


def test_expect_ids_accepts_integer_ids_in_range_and_returns_the_sizes():
    assert expect_ids(torch.tensor([[0, 4], [2, 3]]), 5) == {"B": 2, "T": 2}
    assert expect_ids(torch.zeros(3, 0, dtype=torch.long), 5) == {"B": 3, "T": 0}  # empty


@pytest.mark.parametrize(
    "ids, error, message",
    [
        (
            torch.zeros(2, 3),
            TypeError,
            "tokens: expected a signed integer or unsigned integer array, got dtype float32",
        ),
        (
            torch.zeros(3, dtype=torch.long),
            ValueError,
            "tokens: expected 2 dimensions (B, T), got 1 dimensions (3,)",
        ),
        (
            torch.tensor([[1, 7]]),
            ValueError,
            "tokens: expected values in [0, 7), got min 1 and max 7",
        ),
        (
            torch.tensor([[-2, 0]]),
            ValueError,
            "tokens: expected values in [0, 7), got min -2 and max 0",
        ),
    ],
)
def test_expect_ids_names_the_problem(ids, error, message):
    with pytest.raises(error) as raised:
        expect_ids(ids, 7, "tokens")
    assert str(raised.value) == message


def test_expect_state_checks_shape_kind_and_the_models_dtype():
    weight = torch.zeros(2, 2)
    expect_state(torch.zeros(1, 3, 4), (1, "B", 4), "h_0", like=weight)
    with pytest.raises(ValueError, match=r"^h_0: expected shape \(1, B, 4\), got \(1, 3, 5\)"):
        expect_state(torch.zeros(1, 3, 5), (1, "B", 4), "h_0", like=weight)
    with raises(TypeError, "h_0", "floating point", "int64"):
        expect_state(torch.zeros(1, 3, 4, dtype=torch.long), (1, 3, 4), "h_0", like=weight)
    with raises(TypeError, "h_0", r"float32 \(the model's\)", "float64"):
        expect_state(torch.zeros(1, 3, 4).double(), (1, 3, 4), "h_0", like=weight)


def test_assert_close_passes_within_tolerance_for_arrays_tensors_and_scalars():
    assert_close("x", np.array([1.0, 2.0]), [1.0, 2.0 + 5e-7])
    assert_close("x", torch.tensor([1.0, 2.0]), np.array([1.0, 2.0]))
    assert_close("loss", 3.0, np.float64(3.0))
    assert_close("x", np.zeros((0, 3)), np.zeros((0, 3)))


def test_assert_close_gives_the_message_of_its_docstring():
    got = np.zeros((2, 5))
    expected = np.zeros((2, 5))
    got[1, 4], expected[1, 4] = 0.512, 0.481
    message = (
        "dW differs from autograd by 3.1e-02 at [1, 4] (got 0.512, expected 0.481; tolerance 1e-06)"
    )
    with pytest.raises(AssertionError, match=f"^{re.escape(message)}$"):
        assert_close("dW", got, expected, against="autograd")


def test_assert_close_reports_the_worst_entry_relative_to_the_tolerance():
    expected = np.array([100.0, 1.0])
    got = np.array([100.5, 1.2])  # 0.5 is within rtol on 100, 0.2 is not within it on 1
    with pytest.raises(AssertionError, match=re.escape("by 2.0e-01 at [1] (got 1.2, expected 1;")):
        assert_close("v", got, expected, atol=0.0, rtol=0.01)
    assert_close("v", np.array([100.5, 1.005]), expected, atol=0.0, rtol=0.01)


def test_assert_close_on_a_scalar_has_no_index_and_default_wording():
    message = "loss differs from the reference by 5.0e-01 (got 1.5, expected 1; tolerance 0.1)"
    with pytest.raises(AssertionError, match=f"^{re.escape(message)}$"):
        assert_close("loss", 1.5, 1.0, atol=0.1)


def test_assert_close_reports_a_shape_mismatch():
    message = "dW has shape (3, 2), but autograd has shape (2, 3)"
    with pytest.raises(AssertionError, match=f"^{re.escape(message)}$"):
        assert_close("dW", np.zeros((3, 2)), np.zeros((2, 3)), against="autograd")
    with pytest.raises(
        AssertionError, match=re.escape("b has shape (4,), but the reference has shape (1, 4)")
    ):
        assert_close("b", np.zeros(4), np.zeros((1, 4)))


@pytest.mark.parametrize(("bad", "shown"), [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_assert_close_reports_the_first_non_finite_entry(bad, shown):
    got = np.array([[0.0, 1.0], [bad, bad]])
    message = f"probs contains {shown} at [1, 0]; expected finite values"
    with pytest.raises(AssertionError, match=f"^{re.escape(message)}$"):
        assert_close("probs", got, np.zeros((2, 2)))


def test_assert_close_rejects_values_that_are_notarrays_in():
    with raises(TypeError, "hs", "array or tensor", "NoneType"):
        assert_close("hs", None, np.zeros(2))
    with raises(TypeError, "expected hs", "array or tensor", "dict"):
        assert_close("hs", np.zeros(2), {"a": 1})


def test_assert_close_refuses_a_broken_reference():
    with raises(ValueError, "expected dW", "non-finite"):
        assert_close("dW", np.zeros(2), np.array([0.0, np.nan]))


# --------------------------------------------------------------------------------------------
# How a failure displays: briefly in Jupyter, as a normal exception elsewhere
# --------------------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_failures_are_ordinary_exceptions_with_the_full_traceback_outside_ipython():
    import traceback

    from course.checks import CheckFailed, ShapeMismatch, TypeMismatch

    with pytest.raises(AssertionError) as caught:
        assert_close("hs", np.zeros(2), np.ones(2))
    assert type(caught.value) is CheckFailed and isinstance(caught.value, AssertionError)
    text = "".join(traceback.format_exception(caught.value))
    assert os.path.join("course", "checks", "__init__.py") in text and text.rstrip().endswith(
        str(caught.value)
    )
    with pytest.raises(ValueError) as shape:
        expect_shape(np.zeros(3), (4,), "b")
    assert isinstance(shape.value, ShapeMismatch)
    with pytest.raises(TypeError) as kind:
        expect_dtype(np.zeros(3), "i", "ids")
    assert isinstance(kind.value, TypeMismatch)


def kernel_errors(cells: list[str]) -> list[list[str]]:
    """Run ``cells`` in a real ipykernel; the traceback lines of each error output, as
    JupyterLab shows them (without colours)."""
    import nbformat
    from nbclient import NotebookClient

    from tools.notebooks import kernel_channels_config

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    with tempfile.TemporaryDirectory(prefix="ck") as sockets:  # no TCP port to race for
        NotebookClient(
            notebook, kernel_name="python3", allow_errors=True, timeout=60,
            config=kernel_channels_config(Path(sockets)),
        ).execute()  # fmt: skip
    return [
        [ANSI.sub("", line) for line in output.traceback]
        for cell in notebook.cells
        for output in cell.outputs
        if output.output_type == "error"
    ]


def test_a_failing_check_in_a_jupyter_kernel_shows_its_message_first_and_briefly():
    """A real ipykernel runs failing cells; their error outputs are what JupyterLab shows."""
    cells = [
        "import numpy as np\nfrom course.checks import assert_close, expect_shape",
        "got = np.zeros((2, 3))\n\nassert_close(\n    'hs',\n    got,\n    np.ones((2, 3)),\n"
        "    against='the expected value',\n)",
        "def check(value):\n    assert_close('loss', value, 2.0)\n\ncheck(1.5)",
        "assert_close('probs', None, [1.0])",
        "expect_shape(np.zeros(3), ('T', 'D'), 'xs')",
        "1 / 0",
    ]
    errors = kernel_errors(cells)
    assert len(errors) == len(cells) - 1, errors
    hs, loss, probs, shape, zero = errors
    assert hs == [
        "AssertionError: hs differs from the expected value by 1.0e+00 at [0, 0] (got 0, "
        "expected 1; tolerance 1e-06)",
        "  at Cell In[2], line 3: assert_close(",
    ]
    assert loss[0].startswith("AssertionError: loss differs from the reference by 5.0e-01")
    assert loss[1:] == [
        "  at Cell In[3], line 4: check(1.5)",
        "  at Cell In[3], line 2: assert_close('loss', value, 2.0)",
    ]
    assert probs == [
        "TypeError: probs: expected an array or tensor, got NoneType",
        "  at Cell In[4], line 1: assert_close('probs', None, [1.0])",
    ]
    assert shape[0].startswith("ValueError: xs: expected 2 dimensions (T, D), got 1 dimensions")
    assert len(shape) == 2
    for lines in (hs, loss, probs, shape):
        assert not any("checks" + os.sep in line or "Traceback" in line for line in lines), lines
    # Errors that do not come from a check keep IPython's usual traceback.
    assert "ZeroDivisionError" in "".join(zero) and "Traceback" in "".join(zero)


def test_inputs_kept_names_the_argument_a_call_rewrote():
    import numpy as np

    from course.checks import CheckFailed, inputs_kept

    xs = np.arange(6.0).reshape(2, 3)
    params = {"W": np.ones((2, 2)), "b": [np.zeros(2)]}
    with inputs_kept("f", xs=xs, params=params) as before:
        pass  # a call that changes nothing
    assert before["xs"] is not xs and np.array_equal(before["xs"], xs)
    with raises(CheckFailed, "in place", r"xs at \[1, 2\]", r"5\.0"):
        with inputs_kept("f", xs=xs, params=params) as before:
            xs[1, 2] = -1.0
    assert before["xs"][1, 2] == 5.0  # the copies are from before the call
    with pytest.raises(CheckFailed, match=r"params\['b'\]\[0\] at \[1\] was 0\.0, now 7\.0"):
        with inputs_kept("f", xs=xs, params=params):
            params["b"][0][1] = 7.0
    with raises(CheckFailed, "params", r"\['W', 'b'\]", r"\['W'\]"):
        with inputs_kept("f", params=params):
            del params["b"]
    nan = np.array([np.nan, 1.0])
    with inputs_kept("f", nan=nan):
        pass  # NaN is NaN: no change
    documents = [["a.", "b."], ["c."], []]
    with inputs_kept("f", documents=documents) as before:
        pass  # strings are compared as they are
    assert before["documents"] == documents
    with raises(CheckFailed, r"documents\[0\]\[0\]", r"'a\.'", r"'b\.'"):
        with inputs_kept("f", documents=documents):
            documents[0].reverse()
    params = {"W": np.ones((2, 2))}
    with raises(CheckFailed, r"params\['W'\]", "replaced"):  # an equal array, another object
        with inputs_kept("f", params=params):
            params["W"] = np.ones((2, 2))


def test_snapshot_inputs_and_changed_input_are_inputs_kept_in_two_steps():
    import numpy as np

    from course.checks import changed_input, snapshot_inputs

    inputs = {"x": np.zeros(3), "params": {"W": np.ones(2)}}
    before = snapshot_inputs(inputs)
    assert changed_input("f", inputs, before) is None
    inputs["params"]["W"][0] = 2.0
    change = changed_input("f", inputs, before)
    assert change and "f changed its input in place" in change and "params['W'] at [0]" in change
    assert "was 1.0, now 2.0" in change


def test_expect_value_error_names_the_case_that_did_not_raise():
    def strict(x):
        if x < 0:
            raise ValueError("negative")
        return x

    checks.expect_value_error({"strict(-1)": lambda: strict(-1)})
    with pytest.raises(checks.CheckFailed) as caught:
        checks.expect_value_error(
            {"strict(-1)": lambda: strict(-1), "strict(2)": lambda: strict(2)}
        )
    assert str(caught.value) == "bad input: strict(2) should raise ValueError, but returned 2"
    with pytest.raises(checks.CheckFailed) as caught:
        checks.expect_value_error({"strict('a')": lambda: strict("a")})
    message = str(caught.value)
    assert message.startswith(
        "bad input: strict('a') should raise ValueError, but raised TypeError: "
    )
    assert isinstance(caught.value.__cause__, TypeError)
    with pytest.raises(checks.CheckFailed, match=r"returned 'xxxx.*\.\.\.$"):
        checks.expect_value_error({"long": lambda: "x" * 500})


def test_expect_log_weights_wants_minus_infinity_at_padding_and_finite_values_elsewhere():
    from course.checks.a4_seq2seq_attention import expect_log_weights

    real = np.array([[True, True, False]])
    expected = np.array([[np.log(0.25), np.log(0.75), -np.inf]])
    options = {"where": "a test", "atol": 1e-9, "against": "a reference"}
    expect_log_weights(expected.copy(), expected, real, **options)  # the right answer passes
    with raises(checks.CheckFailed, r"log_weights\[0, 2\]", "padded", "-inf"):
        expect_log_weights(
            np.array([[np.log(0.25), np.log(0.75), -1e9]]), expected, real, **options
        )
    with raises(checks.CheckFailed, r"log_weights\[0, 0\]", "real position", "finite"):
        expect_log_weights(np.array([[-np.inf, 0.0, -np.inf]]), expected, real, **options)
    with raises(checks.CheckFailed, "log_weights", r"\[0, 1\]", "differs"):
        expect_log_weights(
            np.array([[np.log(0.25), np.log(0.7), -np.inf]]), expected, real, **options
        )


def test_expect_log_sum_exp_wants_minus_infinity_for_an_empty_row_and_close_values_elsewhere():
    from course.checks.a5_self_attention import expect_log_sum_exp

    expected = np.array([1.5, -np.inf])
    expect_log_sum_exp("L", np.array([1.5, -np.inf]), expected, against="a reference")
    with raises(checks.CheckFailed, "L", r"\[1\]", "-inf"):
        expect_log_sum_exp("L", np.array([1.5, 0.0]), expected, against="a reference")
    with raises(checks.CheckFailed, "L", "shape"):
        expect_log_sum_exp("L", np.array([1.5]), expected, against="a reference")
    with raises(checks.CheckFailed, "L"):
        expect_log_sum_exp("L", np.array([1.6, -np.inf]), expected, against="a reference")


def test_expect_token_spans_wants_tuples_of_a_token_and_two_python_ints():
    from course.checks.a7_bert import expect_token_spans

    expect_token_spans([("un", 0, 2), ("##done", 2, 6)], "text 0")  # the right form passes
    with raises(checks.CheckFailed, "text 0", "list", "tuple"):
        expect_token_spans(("un", 0, 2), "text 0")
    with raises(checks.CheckFailed, "text 1", "token 1", "tuple"):
        expect_token_spans([("un", 0, 2), ("##done", 2)], "text 1")
    with raises(checks.CheckFailed, "token 0", "Python ints", "int64"):
        expect_token_spans([("un", np.int64(0), 2)], "text 0")


def _visible_tables() -> dict[str, object]:
    """The case tables of the visible tests written as cases, by name."""
    from course.checks import a3_bilstm_elmo as a3
    from course.checks import a4_seq2seq_attention as a4

    table = {(3,): np.log([0.1, 0.5, 0.4])}  # a tiny model for A4 Part D's tables
    return {
        "a3.part_a_cases": a3.part_a_cases,
        "a3.part_a_bad_inputs": a3.part_a_bad_inputs,
        "a3.part_b_mix_weights_cases": a3.part_b_mix_weights_cases,
        "a3.part_b_mix_weights_bad_inputs": a3.part_b_mix_weights_bad_inputs,
        "a3.part_b_scalar_mix_cases": a3.part_b_scalar_mix_cases,
        "a3.part_b_scalar_mix_bad_inputs": a3.part_b_scalar_mix_bad_inputs,
        "a3.part_c_similarity_cases": a3.part_c_similarity_cases,
        "a3.part_c_similarity_bad_inputs": a3.part_c_similarity_bad_inputs,
        "a3.part_c_share_cases": a3.part_c_share_cases,
        "a3.part_c_share_bad_inputs": a3.part_c_share_bad_inputs,
        "a3.part_d_cases": a3.part_d_cases,
        "a3.part_d_bad_inputs": a3.part_d_bad_inputs,
        "a4.part_a_cases": a4.part_a_cases,
        "a4.part_a_bad_inputs": a4.part_a_bad_inputs,
        "a4.part_b_cases": a4.part_b_cases,
        "a4.part_b_bad_inputs": a4.part_b_bad_inputs,
        "a4.part_c_cases": a4.part_c_cases,
        "a4.part_c_bad_inputs": a4.part_c_bad_inputs,
        "a4.part_d_cases": lambda: a4.part_d_cases(table),
        "a4.part_d_bad_inputs": lambda: a4.part_d_bad_inputs(table),
    }


@pytest.mark.parametrize("name", sorted(_visible_tables()))
def test_a_visible_case_table_is_made_afresh_at_each_call_with_a_label_per_case(name):
    """Two calls give the same cases in arrays of their own (a function that writes into one
    call's inputs cannot change the next), each with its own label; the valid cases say what
    they expect (``expected_<quantity>``), the bad inputs do not."""
    make = _visible_tables()[name]
    first, second = make(), make()
    labels = [case.label for case in first]
    assert labels and labels == [case.label for case in second]
    assert len(set(labels)) == len(labels), labels
    for one, other in zip(first, second, strict=True):
        expects = [key for key in one.inputs if key.startswith("expected_")]
        assert bool(expects) == name.endswith("_cases"), (one.label, expects)
        for key in (key for key in one.inputs if key != "table"):  # A4's table is the notebook's
            for array in arrays_in(one.inputs[key]):
                shared = [np.shares_memory(array, b) for b in arrays_in(other.inputs[key])]
                assert not any(shared), f"{name}: {one.label}: {key} is shared between calls"


# --------------------------------------------------------------------------------------------
# the kit of cases (course.checks.cases)
# --------------------------------------------------------------------------------------------


def test_snapshots_catch_inputs_written_in_place_or_replaced():
    params = {"W": np.ones((2, 2))}
    inputs = {"x": np.zeros(3), "params": params}
    before = checks.snapshot_inputs(inputs)
    cases.expect_unchanged("f", inputs, before)
    inputs["x"][1] = 0.5
    with raises(AssertionError, r"\bx at \[1\]", "in place", r"was 0\.0, now 0\.5"):
        cases.expect_unchanged("f", inputs, before)
    inputs["x"][1] = 0.0
    params["W"] = np.ones((2, 2))
    with raises(AssertionError, r"params\['W'\]", "replaced"):
        cases.expect_unchanged("f", inputs, before)
    del params["W"]
    with raises(AssertionError, "keys", "params"):
        cases.expect_unchanged("f", inputs, before)


def test_a_case_reads_its_inputs_by_name_and_names_itself_in_a_failure():
    case = cases.Case("one row, τ = 1", logits=np.zeros(3), temperature=1.0)
    assert case.label == "one row, τ = 1"
    assert case.temperature == 1.0 and case.logits is case.inputs["logits"]
    assert list(case.inputs) == ["logits", "temperature"]
    with raises(AttributeError, "'tau'", "logits, temperature"):
        _ = case.tau
    with pytest.raises(AttributeError, match="read-only"):
        case.temperature = 2.0
    with pytest.raises(TypeError):
        case.inputs["temperature"] = 2.0  # type: ignore[index]
    with pytest.raises(AssertionError) as caught, case.named("temperature_probs", "row 0"):
        raise AssertionError("probs differs")
    assert str(caught.value) == "[temperature_probs, one row, τ = 1, row 0] probs differs"
    with pytest.raises(AssertionError) as caught, cases.case("temperature_probs, one row"):
        raise AssertionError("probs differs")
    assert str(caught.value) == "[temperature_probs, one row] probs differs"


def test_strided_keeps_the_values_in_memory_that_is_not_contiguous():
    array = np.arange(6.0).reshape(2, 3)
    view = cases.strided(array)
    assert not view.flags["C_CONTIGUOUS"] and view.dtype == array.dtype
    np.testing.assert_array_equal(view, array)


def test_unpack_and_expect_array_scalar_floats_say_what_came_back():
    """Each says what came back in a CheckFailed, which a notebook shows briefly."""
    assert cases.unpack((1, 2), "f", ("a", "b")) == (1, 2)
    with raises(
        checks.CheckFailed, r"f should return a tuple \(a, b\)", "ndarray of shape \\(3,\\)"
    ):
        cases.unpack(np.zeros(3), "f", ("a", "b"))
    with raises(AssertionError, "tuple of length 3"):
        cases.unpack((1, 2, 3), "f", ("a", "b"))
    value = np.zeros((2, 3))
    assert cases.expect_array("probs", value, (2, 3), np.float64) is value
    with raises(
        checks.CheckFailed, r"probs should be a NumPy array of shape \(3, 2\)", r"\(2, 3\)"
    ):
        cases.expect_array("probs", value, (3, 2))
    with raises(AssertionError, "probs should be float32", "float64"):
        cases.expect_array("probs", value, (2, 3), np.float32)
    with raises(AssertionError, "shape", "list of length 2"):
        cases.expect_array("probs", [[0.0], [0.0]], (2, 1))
    assert cases.expect_scalar("loss", np.array(2.5)) == 2.5
    for bad in ("2.5", None, np.zeros(2)):
        with raises(checks.CheckFailed, "loss should be a single number"):
            cases.expect_scalar("loss", bad)
    assert cases.expect_floats("norms", [1, np.float32(0.5)], 2) == [1.0, 0.5]
    with raises(checks.CheckFailed, "a list of 3 floats", "list of length 2"):
        cases.expect_floats("norms", [1.0, 2.0], 3)
    with raises(AssertionError, "item 1 is bool"):
        cases.expect_floats("norms", [1.0, True], 2)
    for call in (
        lambda: cases.unpack(None, "f", ("a",)),
        lambda: cases.expect_array("probs", None, (1,)),
        lambda: cases.expect_scalar("loss", None),
        lambda: cases.expect_floats("norms", None, 1),
    ):  # a CheckFailed, so that a visible test's failure shows briefly in a notebook
        with pytest.raises(checks.CheckFailed):
            call()
    assert cases.describe(torch.zeros(2, 1)) == "Tensor of shape (2, 1)"
    assert cases.describe({"a": 1}) == "dict"


def test_expect_tuple_takes_a_tuple_only():
    assert cases.expect_tuple((1, 2), "f", ("a", "b")) == (1, 2)
    with raises(checks.CheckFailed, r"f should return a tuple \(a, b\)", "list of length 2"):
        cases.expect_tuple([1, 2], "f", ("a", "b"))
    with raises(checks.CheckFailed, "tuple of length 3"):
        cases.expect_tuple((1, 2, 3), "f", ("a", "b"))
