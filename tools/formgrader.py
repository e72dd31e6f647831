"""nbgrader's formgrader on a graded course directory, as a TA opens it, for the browser tests.

:func:`running_formgrader` starts ``jupyter lab`` in ``OUT/course`` (the formgrader is a server
extension of it) with the grading venv, on 127.0.0.1 with a random token and private Jupyter
directories, exactly as :mod:`tools.student_lab` starts a student's JupyterLab.
:func:`manual_grading_url` is the page a TA grades a submission on. :data:`AUDIT_JS` lists,
in an open page, what of the student's markup is live.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autograder import nbgrader_format as fmt
from tools.student_lab import Installation, Lab, running_lab


@contextmanager
def running_formgrader(course: Path, home: Path, *, timeout: float = 120) -> Iterator[Lab]:
    """A Jupyter server in the course directory ``course``, with this venv's formgrader."""
    venv = Installation(bundle=course, venv=Path(sys.prefix), seconds=0.0, megabytes=0.0)
    with running_lab(venv, home, timeout=timeout) as lab:
        yield lab


def manual_grading_url(lab: Lab, course: Path, assignment: str, notebook: str, student: str) -> str:
    """The formgrader page on which a TA grades ``student``'s ``notebook`` by hand."""
    with fmt.gradebook(course) as gradebook:
        submission = gradebook.find_submission_notebook(notebook, assignment, student)
        return f"{lab.url}/formgrader/submissions/{submission.id}/"


# Evaluated in a page with a CSS selector: what ran (window.__pwned, which every hostile payload
# of tests/grading/attacks appends to) and every live attribute left under the selector: an
# event handler; a javascript:/vbscript:/data:text URL in href, src, action, formaction,
# xlink:href; a CSS url(...) in any attribute; and in typeset math (mjx-container) any link
# other than MathJax's own #glyph references, and any inline style beyond the ones MathJax
# sets itself (alignment, font, margins).
AUDIT_JS = """
(selector) => {
  const live = [];
  const MATHJAX_STYLE = /^(vertical-align|font-family|font-style|font-weight|font-size|max-width|min-width|margin-(left|right|top|bottom))$/;
  const urls = ['href', 'src', 'action', 'formaction', 'xlink:href', 'data', 'srcdoc'];
  for (const element of document.querySelectorAll(selector + ' *')) {
    const inMath = element.parentElement !== null
      && element.parentElement.closest('mjx-container') !== null;  // inside typeset math
    for (const attribute of element.attributes) {
      const name = attribute.name.toLowerCase();
      const value = attribute.value.replace(/\\s+/g, '').toLowerCase();
      const handler = name.startsWith('on');
      const code = urls.includes(name) && (
        value.startsWith('javascript:') || value.startsWith('vbscript:')
        || value.startsWith('data:text') || name === 'srcdoc');
      const fetches = value.includes('url(');
      const mathLink = inMath && (name === 'href' || name === 'xlink:href')
        && !value.startsWith('#');
      const mathStyle = inMath && name === 'style' && value.split(';').some(
        (rule) => rule && !MATHJAX_STYLE.test(rule.split(':')[0]));
      if (handler || code || fetches || mathLink || mathStyle) {
        live.push(element.tagName.toLowerCase() + ' ' + attribute.name);
      }
    }
  }
  for (const tag of ['script', 'iframe', 'object', 'embed', 'form', 'style', 'link', 'meta']) {
    for (const element of document.querySelectorAll(selector + ' ' + tag)) {
      live.push(tag);
    }
  }
  return {ran: window.__pwned || [], live: live};
}
"""

# Resolves when MathJax has typeset the page; the number of rendered and of failed formulas.
MATHJAX_JS = """
() => window.MathJax.startup.promise.then(() => ({
  rendered: document.querySelectorAll('mjx-container').length,
  errors: document.querySelectorAll('mjx-merror').length,
}))
"""
