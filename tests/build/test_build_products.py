"""What `make` built: executed lectures and solutions, metrics, the website and the bundle.

`make test` runs the build first, so these check the products of the same commit.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as nbg
from tools.build import BOOK, BUILD, DIST, METRICS, lecture_sources
from tools.notebooks import REPO

HTML = BOOK / "_build" / "html"
LECTURES = [s.stem for s in lecture_sources()]
ASSIGNMENTS = nbg.assignment_ids()


def test_the_course_has_content():
    assert LECTURES, "no lectures/NN_*.py found"
    assert ASSIGNMENTS, "no solutions/<assignment>/*.py found"


def _executed_without_error(path: Path) -> None:
    assert path.exists(), f"{path} was not built; run `make`"
    notebook = nbformat.read(path, as_version=4)
    code_cells = [c for c in notebook.cells if c.cell_type == "code" and c.source.strip()]
    assert code_cells, f"{path.name} has no code"
    for index, cell in enumerate(code_cells):
        assert cell.execution_count is not None, (
            f"{path.name}: code cell {index} was never executed"
        )
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, (
            f"{path.name}: code cell {index} raised {errors[0].ename}: {errors[0].evalue}"
        )


@pytest.mark.parametrize("lecture", LECTURES)
@pytest.mark.build
def test_lecture_executed_top_to_bottom(lecture):
    _executed_without_error(BUILD / "lectures" / f"{lecture}.ipynb")


@pytest.mark.parametrize("lecture", LECTURES)
@pytest.mark.build
def test_lecture_shows_no_bare_object_reprs(lecture):
    """A cell ending in a call that returns a function or an object shows its repr
    ("<function ...>") under the output, in JupyterLab and on the site: assign it instead."""
    notebook = nbformat.read(BUILD / "lectures" / f"{lecture}.ipynb", as_version=4)
    bare = [
        (index, output["data"]["text/plain"][:60])
        for index, cell in enumerate(notebook.cells)
        for output in cell.get("outputs", [])
        if output.get("output_type") == "execute_result"
        and re.match(
            r"<[\w.]+( object)? ?.* at 0x|<function ", output["data"].get("text/plain", "")
        )
    ]
    assert not bare, f"cells showing a bare repr (index, text): {bare}"


# A figure's alt text says what it shows: a sentence, not the image's file name (what the site
# shows a screen reader when a cell has none). It lives in the code cell's metadata,
# ``{"mystnb": {"image": {"alt": ...}}}``, written in the lecture source's ``# %%`` header.
ALT_MIN_WORDS = 6
IMAGE_FILE = re.compile(r"\S+\.(png|jpe?g|svg|gif)\b", re.IGNORECASE)


def figures_without_alt_text(notebook: nbformat.NotebookNode) -> list[str]:
    """Each code cell that shows an image but has no alt text that says what it shows: its
    position, first line and what is wrong."""
    problems = []
    for index, cell in enumerate(notebook.cells):
        shows_image = any(
            key.startswith("image/")
            for output in cell.get("outputs", [])
            for key in output.get("data", {})
        )
        if cell.cell_type != "code" or not shows_image:
            continue
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
        first_line = cell.source.partition("\n")[0][:50]
        where = f"cell {index} ({first_line!r})"
        if not isinstance(alt, str) or len(alt.split()) < ALT_MIN_WORDS:
            problems.append(f"{where}: no alt text of {ALT_MIN_WORDS} words or more: {alt!r}")
        elif IMAGE_FILE.search(alt):
            problems.append(f"{where}: the alt text names a file: {alt!r}")
    return problems


@pytest.mark.parametrize("lecture", LECTURES)
@pytest.mark.build
def test_every_lecture_figure_has_alt_text(lecture):
    """Each figure a lecture shows has alt text in its cell's metadata (``mystnb.image.alt``,
    in the source's ``# %% mystnb={"image": {"alt": "..."}}`` header): what it plots, not
    what it concludes. A cell that shows two figures gives both one text."""
    notebook = nbformat.read(BUILD / "lectures" / f"{lecture}.ipynb", as_version=4)
    problems = figures_without_alt_text(notebook)
    assert not problems, f"{lecture}: figures without alt text:\n" + "\n".join(problems)


@pytest.mark.build
def test_the_measurements_page_shows_every_recorded_figure_of_the_build():
    """The website's measurements page includes the table the build writes from build/metrics:
    each figure a lecture recorded, its value and whether its claim holds."""
    page = (HTML / "measurements.html").read_text(encoding="utf-8")
    cells = [
        re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", page, re.S)
    ]
    rows = {tuple(cells[i : i + 6]) for i in range(0, len(cells) - 5)}
    recorded = [
        (str(int(notebook["notebook"][:2])), m)
        for notebook in (json.loads(p.read_text()) for p in sorted(METRICS.glob("*.json")))
        for m in notebook["metrics"]
    ]
    assert recorded
    for lecture, m in recorded:
        value = f"{m['value']:.4g} {m['unit']}".strip()
        found = [r for r in rows if r[0] == lecture and r[2] == value and r[5] == "yes"]
        assert found, f"the measurements page lacks Lecture {lecture}'s {m['name']!r} = {value}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@pytest.mark.build
def test_reference_solution_executed_top_to_bottom(assignment):
    for source in nbg.source_files(assignment):
        _executed_without_error(BUILD / "solutions" / assignment / f"{source.stem}.ipynb")


@pytest.mark.parametrize("lecture", LECTURES)
@pytest.mark.build
def test_each_trained_model_beats_its_baseline(lecture):
    path = METRICS / f"{lecture}.json"
    assert path.exists(), f"{lecture} recorded no figures with course.metrics.record"
    metrics = json.loads(path.read_text())["metrics"]
    assert metrics, f"{lecture} recorded an empty list of figures"
    for metric in metrics:
        assert metric["baseline"] is not None, (
            f"{lecture}: {metric['name']} has no baseline to beat"
        )
        verb = "match" if metric.get("claim") == "matches" else "beat"
        assert metric["passes"], (
            f"{lecture}: {metric['name']} = {metric['value']} does not {verb} "
            f"{metric['baseline']} within its measured spread between machines "
            f"({metric.get('margin', 0.0)}; `python -m tools.spread` measures it)"
        )


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@pytest.mark.build
def test_build_autograded_the_reference_to_full_marks(assignment):
    grades = json.loads((BUILD / "grades" / f"{assignment}.json").read_text())
    assert grades["autograded_max"] >= 10, (
        f"{assignment} has only {grades['autograded_max']} autograded points"
    )
    assert grades["autograded_score"] == grades["autograded_max"], grades


# -- the website --------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(page: Path) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.tags


def _pages() -> list[Path]:
    return (
        [HTML / "intro.html"]
        + [HTML / "_generated" / "lectures" / f"{name}.html" for name in LECTURES]
        + [
            HTML / "_generated" / "assignments" / a / f"{s.stem}.html"
            for a in ASSIGNMENTS
            for s in nbg.source_files(a)
        ]
    )


@pytest.mark.build
def test_every_unit_has_a_page():
    missing = [str(p.relative_to(HTML)) for p in _pages() if not p.exists()]
    assert not missing, f"pages not built: {missing}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.stem)
@pytest.mark.build
def test_page_loads_nothing_from_the_internet_and_its_files_exist(page):
    for tag, attrs in _tags(page):
        reference = (
            attrs.get("src")
            if tag in {"script", "img"}
            else attrs.get("href")
            if tag == "link"
            else None
        )
        if not reference:
            continue
        assert not re.match(r"^(https?:)?//", reference), (
            f"{page.name} loads {reference} from the internet"
        )
        target = (page.parent / reference.split("?")[0].split("#")[0]).resolve()
        assert target.exists(), f"{page.name} refers to {reference}, which is not in the site"


def images_without_alt_text(tags: list[tuple[str, dict]]) -> list[str]:
    """The src of each <img> whose alt is missing, empty, its own src or a file name."""
    return [
        attrs.get("src", "?")
        for tag, attrs in tags
        if tag == "img"
        and (
            not (attrs.get("alt") or "").strip()
            or attrs["alt"] == attrs.get("src")
            or IMAGE_FILE.search(attrs["alt"])
        )
    ]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.stem)
@pytest.mark.build
def test_every_image_on_the_page_has_alt_text(page):
    """myst-nb writes a figure's file path as its alt when its cell has no alt text."""
    missing = images_without_alt_text(_tags(page))
    assert not missing, f"{page.name}: images without alt text: {missing}"


@pytest.mark.build
def test_math_is_rendered_by_the_local_mathjax():
    page = HTML / "_generated" / "lectures" / f"{LECTURES[0]}.html"
    scripts = [attrs.get("src", "") for tag, attrs in _tags(page) if tag == "script"]
    mathjax = [s for s in scripts if "mathjax" in s.lower()]
    assert mathjax, f"{page.name} loads no MathJax"
    assert all(not s.startswith(("http", "//")) for s in mathjax), mathjax
    assert (page.parent / mathjax[0].split("?")[0]).resolve().exists()
    assert 'class="math' in page.read_text(), f"{page.name} has no math for MathJax to render"


@pytest.mark.build
def test_lecture_figures_are_in_the_site():
    page = HTML / "_generated" / "lectures" / f"{LECTURES[0]}.html"
    images = [attrs["src"] for tag, attrs in _tags(page) if tag == "img" and "src" in attrs]
    figures = [src for src in images if not src.startswith("data:") and "logo" not in src]
    assert len(figures) >= 3, f"{page.name} shows only {len(figures)} figures: {figures}"


# -- the student bundle -------------------------------------------------------------------


@pytest.mark.build
def test_student_bundle_has_what_a_student_needs_and_nothing_else():
    assert (DIST / "README.md").exists() and (DIST / "environment.yml").exists()
    assert (DIST / "course" / "__init__.py").exists()
    for lecture in LECTURES:
        _executed_without_error(DIST / "lectures" / f"{lecture}.ipynb")
    for assignment in ASSIGNMENTS:
        for source in nbg.source_files(assignment):
            assert (DIST / "assignments" / assignment / f"{source.stem}.ipynb").exists()
    top_level = {p.name for p in DIST.iterdir()}
    assert not top_level & {"solutions", "autograder", "tools", "tests", "build"}, top_level
    assert (DIST.parent / "student.zip").exists()
    for name in ("LICENSE", "LICENSE-prose.txt", "NOTICE.md"):  # the licences travel with it
        assert (DIST / name).read_text() == (REPO / name).read_text(), name


def test_the_licences_name_every_third_party_notice_shipped():
    notice = (REPO / "NOTICE.md").read_text()
    assert "MIT License" in (REPO / "LICENSE").read_text()
    assert (
        "Creative Commons Attribution 4.0 International Public License"
        in (REPO / "LICENSE-prose.txt").read_text()
    )
    shipped = sorted(REPO.glob("course/**/LICENSE-*.txt"))
    assert len(shipped) >= 7
    for path in shipped:
        assert path.name in notice, f"NOTICE.md does not name {path.relative_to(REPO)}"


STUDENT_REQUIREMENTS = REPO / "requirements-student.txt"
INSTRUCTOR_ONLY = {"jupyter-book", "sphinx", "sphinx-mathjax-offline", "sphinxcontrib-bibtex"}
INSTRUCTOR_ONLY |= {"pytest", "playwright", "ruff", "jupytext", "nbclient"}


def _requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[<>=!~\[ ;]", line, maxsplit=1)[0].lower())
    return names


@pytest.mark.build
def test_student_bundle_installs_only_the_student_requirements():
    shipped = DIST / STUDENT_REQUIREMENTS.name
    assert shipped.read_text() == STUDENT_REQUIREMENTS.read_text()
    assert "torch==2.13.0" in shipped.read_text().split()
    assert not _requirement_names(shipped) & INSTRUCTOR_ONLY, _requirement_names(shipped)
    assert {"jupyterlab", "nbgrader", "ipywidgets"} <= _requirement_names(shipped)
    assert "-r requirements-student.txt" in (REPO / "requirements.txt").read_text()
    assert not (DIST / "requirements.txt").exists()
    environment = (DIST / "environment.yml").read_text()
    assert "- -r requirements-student.txt" in environment and "requirements.txt" not in environment
    assert "pip install -r requirements-student.txt ." in (DIST / "README.md").read_text()


@pytest.mark.build
def test_student_bundle_turns_off_the_teacher_panels():
    import tomllib

    wheel = tomllib.loads((DIST / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    shared = wheel["targets"]["wheel"]["shared-data"]  # {bundle file: place in the environment}
    assert all(target == source.split("/", 1)[1] for source, target in shared.items()), shared
    installed = {Path(f).name: DIST / f for f in shared}
    assert all(path.is_file() for path in installed.values()), installed
    disabled = json.loads(installed["page_config.json"].read_text())["disabledExtensions"]
    for plugin in ("formgrader", "course-list", "create-assignment"):
        assert disabled.get(f"@jupyter/nbgrader:{plugin}") is True, disabled
    assert "@jupyter/nbgrader:validate-assignment" not in disabled
    server = json.loads(installed["seqcourse_student.json"].read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions["nbgrader.server_extensions.formgrader"] is False
    assert extensions["nbgrader.server_extensions.course_list"] is False
    assert extensions["nbgrader.server_extensions.validate_assignment"] is True
    # loaded after nbgrader's own file, which turns everything on
    assert "seqcourse_student.json" > "nbgrader.json"
    # every kernel of the student's environment loads the first-cell hint (course.kernel_hints)
    assert "etc/ipython/ipython_kernel_config.json" in shared.values(), shared
    kernel = json.loads(installed["ipython_kernel_config.json"].read_text())
    assert kernel["IPKernelApp"]["extensions"] == ["course.kernel_hints"]


def _bundle_notebooks() -> list[Path]:
    return sorted(DIST.glob("lectures/*.ipynb")) + sorted(DIST.glob("assignments/*/*.ipynb"))


@pytest.mark.parametrize("notebook", _bundle_notebooks(), ids=lambda p: p.stem)
@pytest.mark.build
def test_bundle_notebooks_use_no_myst_markup(notebook):
    from tools.lab_markdown import DIRECTIVE, LABELLED_MATH, ROLE, TARGET

    for index, cell in enumerate(nbformat.read(notebook, as_version=4).cells):
        if cell.cell_type != "markdown":
            continue
        for pattern in (ROLE, TARGET, LABELLED_MATH, DIRECTIVE):
            found = pattern.search(cell.source)
            assert not found, f"{notebook.name} cell {index}: {found.group(0)!r}"


@pytest.mark.parametrize("lecture", LECTURES)
@pytest.mark.build
def test_bundle_equations_are_numbered_as_on_the_website(lecture):
    from tools.lab_markdown import collect_labels

    executed = nbformat.read(BUILD / "lectures" / f"{lecture}.ipynb", as_version=4)
    bundle_numbers, _ = collect_labels(executed.cells)
    page = (HTML / "_generated" / "lectures" / f"{lecture}.html").read_text(encoding="utf-8")
    site_numbers = {
        label: int(number)
        for label, number in re.findall(
            r'id="equation-([\w:.-]+)">\s*<span class="eqno">\((\d+)\)', page
        )
    }
    assert bundle_numbers == site_numbers
    bundle = nbformat.read(DIST / "lectures" / f"{lecture}.ipynb", as_version=4)
    tags = re.findall(r"\\tag\{(\d+)\}", "".join(c.source for c in bundle.cells))
    assert [int(t) for t in tags] == sorted(site_numbers.values())


@pytest.mark.build
def test_student_bundle_ships_the_course_trained_checkpoints_unchanged():
    from course.checkpoints import CHECKPOINT_DIR, available_checkpoints

    shipped = available_checkpoints(DIST / "course" / "checkpoints")
    assert shipped and shipped == available_checkpoints(), shipped
    for file in CHECKPOINT_DIR.iterdir():
        if file.is_file() and file.suffix in (".pt", ".json", ".gz"):
            copy = DIST / "course" / "checkpoints" / file.name
            assert copy.read_bytes() == file.read_bytes(), f"the bundle's {file.name} differs"


def test_readme_gives_exactly_the_two_commands():
    readme = (REPO / "README.md").read_text()
    assert "make test" in readme and re.search(r"^make\s*(#.*)?$", readme, re.M), (
        "README must show `make` and `make test`"
    )
    assert (REPO / ".ci" / "run").read_text().strip().splitlines()[-1].strip() == "make test"
