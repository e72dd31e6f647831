"""nbgrader on the course's hub, for a grader: the course, its exchange, and the course
directory that ``python -m tools.hub course ~/seqcourse`` made (Formgrader opens it)."""

import os

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

c.CourseDirectory.course_id = "seqcourse"
# the hub sets SEQCOURSE_EXCHANGE in every server (deploy/jupyterhub/jupyterhub_config.py)
c.Exchange.root = os.environ.get("SEQCOURSE_EXCHANGE", "/srv/nbgrader/exchange")
c.CourseDirectory.root = os.path.expanduser("~/seqcourse")
