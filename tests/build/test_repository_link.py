"""The website links the course repository when its address is set, and only then."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.messages import raises
from tools import build

BOOK = build.BOOK
ADDRESS = "https://git.example.edu/course/sequence-models"  # a host the theme does not know


@pytest.fixture
def pyproject(tmp_path, monkeypatch):
    """A pyproject.toml to write ``[project.urls]`` into, with the variable unset."""
    monkeypatch.delenv(build.REPOSITORY_VARIABLE, raising=False)
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "course"\n')
    return path


def test_no_address_is_none(pyproject, monkeypatch):
    assert build.repository_url(pyproject) is None
    monkeypatch.setenv(build.REPOSITORY_VARIABLE, "  ")  # blank counts as unset
    assert build.repository_url(pyproject) is None


def test_the_address_comes_from_pyproject(pyproject):
    pyproject.write_text(pyproject.read_text() + f'\n[project.urls]\nRepository = "{ADDRESS}/"\n')
    assert build.repository_url(pyproject) == ADDRESS


def test_the_variable_wins_over_pyproject(pyproject, monkeypatch):
    pyproject.write_text(pyproject.read_text() + f'\n[project.urls]\nRepository = "{ADDRESS}"\n')
    monkeypatch.setenv(build.REPOSITORY_VARIABLE, " http://github.com/org/course ")
    assert build.repository_url(pyproject) == "http://github.com/org/course"


@pytest.mark.parametrize(
    "value",
    [
        "git@github.com:org/course.git",
        "ftp://example.org/course",
        "github.com/org/course",
        'https://example.org/a"b',
    ],
)
def test_an_address_that_is_not_http_is_refused(pyproject, monkeypatch, value):
    monkeypatch.setenv(build.REPOSITORY_VARIABLE, value)
    with raises(build.BuildFailed, "COURSE_REPOSITORY_URL", "http"):
        build.repository_url(pyproject)
    monkeypatch.delenv(build.REPOSITORY_VARIABLE)
    toml = f"[project]\nname = 'course'\n[project.urls]\nRepository = '{value}'\n"
    pyproject.write_text(toml)  # a literal string: the address may hold a double quote
    with pytest.raises(build.BuildFailed, match=r"\[project.urls\] Repository in pyproject"):
        build.repository_url(pyproject)


def test_the_build_says_the_site_has_no_link_and_how_to_add_one(tmp_path, monkeypatch, capsys):
    """One line, before anything is copied (here the bundle is missing, so the build stops)."""
    monkeypatch.delenv(build.REPOSITORY_VARIABLE, raising=False)
    monkeypatch.setattr(build, "PYPROJECT", tmp_path / "pyproject.toml")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "course"\n')
    monkeypatch.setattr(build, "BOOK", tmp_path / "book")
    monkeypatch.setattr(build, "DIST", tmp_path / "dist" / "sequence-models")
    with pytest.raises(build.NotebookBuildError, match="build the bundle first"):
        build.build_book()
    lines = [line for line in capsys.readouterr().out.splitlines() if "repository" in line]
    assert lines == [
        "[build] book: the site has no repository link; set Repository under [project.urls] "
        "in pyproject.toml, or COURSE_REPOSITORY_URL, to add one"
    ]
    monkeypatch.setenv(build.REPOSITORY_VARIABLE, "www.example.org/course")
    with raises(build.BuildFailed, "COURSE_REPOSITORY_URL", "http"):
        build.build_book()


def test_the_landing_page_asks_for_the_link():
    assert "```{repository-link}\n```" in (BOOK / "intro.md").read_text()


@pytest.mark.parametrize(
    ("address", "icon"),
    [("https://github.com/org/course", "fa-github"), (ADDRESS, "fa-git-alt"), (None, None)],
    ids=["github", "other-host", "none"],
)
def test_a_book_links_its_address_in_its_header_and_on_its_page(tmp_path, address, icon):
    """A one-page book with the site's configuration and extensions, and the build's overrides
    when there is an address, built as `make` does (offline, warnings are errors; about 3 s):
    its page has the header's repository button and the "Source" link, both to the address
    (the theme's button on GitHub, the course extension's elsewhere), or neither."""
    for name in ("_config.yml", "references.bib"):
        shutil.copyfile(BOOK / name, tmp_path / name)
    for name in ("_ext", "_static"):
        shutil.copytree(BOOK / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (tmp_path / "intro.md").write_text("# Course\n\nText.\n\n```{repository-link}\n```\n")
    command = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(tmp_path)]
    command += ["--toc", str(tmp_path / "_toc.yml"), "-W", "--keep-going", "-q"]
    if address:  # written elsewhere, as the build writes it into _generated/
        overrides = build.book_config_overrides(address)
        config = build.write_book_config(tmp_path, overrides, tmp_path / "gen" / "_config.yml")
        command += ["--config", str(config)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    page = (tmp_path / "_build" / "html" / "intro.html").read_text()
    buttons = re.findall(r'<a href="([^"]*)"[^>]*btn-source-repository-button', page)
    if address is None:
        assert not buttons and "course-repository" not in page and 'href=""' not in page
        return
    assert buttons == [address], buttons
    assert f'<i class="fab {icon}"></i>' in page
    # (the theme writes a GitHub address's link text as "org/course")
    link = f'<p class="course-repository">Source: <a class="[^"]*" href="{re.escape(address)}">'
    assert re.search(link, page), page
