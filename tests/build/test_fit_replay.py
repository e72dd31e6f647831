"""Recording and replaying the lectures' runs and evaluations (``tools/fit_replay.py``): the
build records them in its kernels, the students' JupyterLab in the suite replays them, and
``course/`` holds none of it."""

from __future__ import annotations

import inspect
import itertools
import json
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from torch import nn

from course import train as train_module
from course.train import TrainingHistory, fit
from tools import fit_replay
from tools.fit_replay import REMEMBERED, Runs, install, write_startup
from tools.notebooks import execute


@pytest.fixture
def installed():
    """``install(record=..., replay=...)``, undone when the test ends."""
    undo = []

    def start(record: Path | None = None, replay: Path | None = None) -> None:
        while undo:
            undo.pop()()
        undo.append(install(record=record, replay=replay))

    yield start
    while undo:
        undo.pop()()


def _dropout_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 1))


def _numbered_batches():
    """Endless batches that say which one they are, from a generator of their own."""
    generator = torch.Generator().manual_seed(1)
    for n in itertools.count():
        yield n, torch.randn(8, 3, generator=generator), torch.randn(8, 1, generator=generator)


def _counting_loss(calls: list, scale: float = 1.0):
    def loss_fn(model, batch):
        calls.append(batch[0])
        _, x, y = batch
        return scale * ((model(x) - y) ** 2).mean()

    return loss_fn


def _run(calls, *, scale=1.0, lr=1e-2, steps=6):
    """A run through ``course.train.fit`` as a lecture calls it (the module's attribute)."""
    model = _dropout_model()
    batches = _numbered_batches()
    history = train_module.fit(
        model, _counting_loss(calls, scale), batches, steps=steps, lr=lr, desc="probe"
    )
    return model, history, next(batches)[0], torch.rand(3)


def test_a_recorded_run_is_replayed_to_the_same_end_without_training(tmp_path, installed, capsys):
    installed(record=tmp_path)
    trained_calls = []
    trained, history, next_batch, draws = _run(trained_calls)
    trained_line = capsys.readouterr().out.splitlines()[-1]
    assert trained_calls == [0, 1, 2, 3, 4, 5] and len(list(tmp_path.glob("*.pt"))) == 1

    installed(replay=tmp_path)
    replay_calls = []
    replayed, replayed_history, replayed_next, replayed_draws = _run(replay_calls)
    assert replay_calls == [0]  # not trained: the loss of the first batch, checked, and no more
    assert replayed_history == history
    replayed_state = replayed.state_dict()
    for name, value in trained.state_dict().items():
        assert torch.equal(value, replayed_state[name]), name
    assert replayed.training
    assert replayed_next == next_batch == 6  # the batches the run took were consumed
    assert torch.equal(replayed_draws, draws)  # the random state after the run is the same
    assert capsys.readouterr().out.splitlines()[-1] == trained_line


@pytest.mark.parametrize(
    "change", [{"scale": 2.0}, {"lr": 2e-2}, {"steps": 5}], ids=["closure", "setting", "steps"]
)
def test_a_run_that_starts_from_anything_else_is_trained(tmp_path, installed, change):
    installed(record=tmp_path)
    _run([])
    installed(record=tmp_path, replay=tmp_path)
    calls = []
    _run(calls, **change)
    assert calls == list(range(change.get("steps", 6)))
    assert len(list(tmp_path.glob("*.pt"))) == 2  # recorded as a run of its own


def test_a_run_from_something_without_a_fingerprint_is_neither_recorded_nor_replayed(
    tmp_path, installed
):
    class Opaque:
        pass

    def loss_fn(model, batch):
        return (model(torch.ones(1, 3)) - batch[0]).pow(2).mean()

    installed(record=tmp_path, replay=tmp_path)
    history = train_module.fit(
        _dropout_model(), loss_fn, [(1.0, Opaque())] * 3, steps=3, progress=False
    )
    assert history.steps == 3 and not list(tmp_path.iterdir())


class Pick(nn.Module):
    """Reads one of two inputs, chosen by a plain attribute that is not a weight."""

    def __init__(self, layer: int) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layer = layer
        self.linear = nn.Linear(3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x[self.layer])


def _pick_run(layer: int, calls: list) -> TrainingHistory:
    def loss_fn(model, batch):
        calls.append(1)
        x, y = batch
        return ((model(x) - y) ** 2).mean()

    generator = torch.Generator().manual_seed(0)
    batch = (torch.randn(2, 8, 3, generator=generator), torch.randn(8, 1, generator=generator))
    return train_module.fit(Pick(layer), loss_fn, [batch] * 4, steps=4, lr=0.1, progress=False)


def test_a_model_that_differs_only_in_a_plain_attribute_is_trained(tmp_path, installed):
    installed(record=tmp_path, replay=tmp_path)
    first = _pick_run(0, [])
    calls = []
    second = _pick_run(1, calls)
    assert len(calls) == 4 and second.losses != first.losses
    assert len(list(tmp_path.glob("*.pt"))) == 2


def test_a_recorded_run_whose_first_loss_differs_is_not_replayed(tmp_path, installed, monkeypatch):
    """Even where two runs' keys agree, the first batch's loss tells them apart."""
    monkeypatch.setattr(fit_replay, "_run_key", lambda *args: "one-key-for-all")
    installed(record=tmp_path, replay=tmp_path)
    _pick_run(0, [])
    calls = []
    _pick_run(1, calls)
    assert len(calls) == 1 + 4  # the check's loss, which differed, then four training steps


def test_installing_wraps_every_holder_and_undoing_puts_the_originals_back(tmp_path):
    from course.analysis import lm
    from course.checkpoints import windowed_bits_per_char  # taken by name before the install

    original_fit, original_bits = fit, lm.windowed_bits_per_char
    undo = install(record=tmp_path)
    try:
        assert train_module.fit is not original_fit and train_module.fit.replayed_by.record
        assert train_module.fit.__wrapped__ is original_fit
        assert globals()["fit"] is train_module.fit  # this module took it by name
        from course import checkpoints

        assert checkpoints.windowed_bits_per_char is lm.windowed_bits_per_char
        assert lm.windowed_bits_per_char is not original_bits
        with pytest.raises(RuntimeError, match="recorded and replayed already"):
            install(replay=tmp_path)
    finally:
        undo()
    assert train_module.fit is original_fit and globals()["fit"] is original_fit
    assert lm.windowed_bits_per_char is original_bits is windowed_bits_per_char


def test_the_remembered_evaluations_exist_and_course_holds_no_replay():
    for target in REMEMBERED:
        module, name = target.split(":")
        function = getattr(__import__(module, fromlist=[name]), name)
        assert "def " + name in inspect.getsource(function), target
    source = inspect.getsource(train_module)
    assert "replay" not in source and "environ" not in source  # the plain loop students read


# -- evaluations -------------------------------------------------------------------------------


def _evaluation(calls: list):
    @torch.no_grad()
    def heldout(model: nn.Module, x: torch.Tensor, *, scale: float = 1.0) -> dict:
        calls.append(scale)
        torch.rand(5)  # moves the random state, as sampling would
        out = model(x) * scale
        return {"mean": out.mean().item(), "outputs": out, "sizes": (len(x), [1, 2])}

    return heldout


def test_a_recorded_evaluation_is_replayed_with_its_result_and_random_state(tmp_path):
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(2))
    calls = []
    torch.manual_seed(0)
    recording = Runs(record=tmp_path / "lecture")  # as the build: a folder per lecture
    first = recording.remember(_evaluation(calls))(_dropout_model(), x)
    after = torch.rand(3)
    assert calls == [1.0] and len(list((tmp_path / "lecture").glob("call-*.pt"))) == 1

    replaying = Runs(replay=tmp_path)  # as the lab: the folder of the lectures' folders
    calls = []
    torch.manual_seed(0)
    again = replaying.remember(_evaluation(calls))(_dropout_model(), x)
    assert calls == []  # not evaluated again
    assert again["mean"] == first["mean"] and again["sizes"] == (4, [1, 2])
    assert torch.equal(again["outputs"], first["outputs"])
    assert torch.equal(torch.rand(3), after)  # the random state the recorded call left

    for changed in ({"scale": 2.0}, {"x": x + 1}, {"seed": 1}):  # anything else is evaluated
        calls = []
        torch.manual_seed(changed.get("seed", 0))
        heldout = replaying.remember(_evaluation(calls))
        heldout(_dropout_model(), changed.get("x", x), scale=changed.get("scale", 1.0))
        assert len(calls) == 1, changed


def test_an_evaluation_without_a_fingerprint_is_itself(tmp_path):
    class Opaque:
        pass

    calls = []
    runs = Runs(record=tmp_path, replay=tmp_path)
    heldout = runs.remember(_evaluation(calls))
    assert heldout.__name__ == "heldout" and "scale" in str(inspect.signature(heldout))

    @runs.remember
    def opaque(thing: Opaque) -> int:
        calls.append("opaque")
        return 1

    assert opaque(Opaque()) == 1 and opaque(Opaque()) == 1
    assert calls == ["opaque", "opaque"] and not list(tmp_path.iterdir())


# -- in a kernel -------------------------------------------------------------------------------


def test_a_kernel_started_with_the_startup_file_records_and_leaves_no_name(tmp_path):
    """What the build does for each lecture: the startup file installs the recorder in the
    kernel; a run there is recorded; the student's namespace has nothing new in it."""
    startup = write_startup(tmp_path / "ipython", record=tmp_path / "fits")
    assert "record the training runs into" in startup.read_text()
    code = (
        "import torch\n"
        "from course.train import fit\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Linear(2, 1)\n"
        "batches = [(torch.ones(4, 2), torch.zeros(4, 1))] * 3\n"
        "def loss_fn(m, b):\n    return ((m(b[0]) - b[1]) ** 2).mean()\n"
        "history = fit(model, loss_fn, batches, steps=3, progress=False)\n"
        "print(sorted(n for n in dir() if not n.startswith('_')))"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    names = {}
    for ipython in ("plain", "ipython"):  # a kernel without the startup file, and one with it
        env = {"IPYTHONDIR": str(tmp_path / ipython)}
        result = execute(notebook, name="startup.ipynb", cwd=tmp_path / "run", env=env)
        names[ipython] = result.notebook.cells[0].outputs[0]["text"]
    assert names["ipython"] == names["plain"] and "'history'" in names["plain"]
    assert len(list((tmp_path / "fits").glob("*.pt"))) == 1


def test_the_lab_replays_only_when_asked(tmp_path, monkeypatch):
    from tools import student_lab

    venv = Path(sys.executable).parent.parent
    installation = student_lab.Installation(tmp_path / "course", venv, 0.0, 0.0)
    (tmp_path / "fits").mkdir()
    (tmp_path / "fits" / fit_replay.THREADS_FILE).write_text(json.dumps({"OMP_NUM_THREADS": 3}))
    home = tmp_path / "home"
    env = student_lab.lab_environment(installation, home, replay=tmp_path / "fits")
    startup = Path(env["IPYTHONDIR"]) / "profile_default" / "startup" / fit_replay.STARTUP_NAME
    assert f"replay={str(tmp_path / 'fits')!r}" in startup.read_text()
    assert env["OMP_NUM_THREADS"] == "3"
    student_lab.lab_environment(installation, home)  # the same home, not replaying now
    assert not startup.exists()
