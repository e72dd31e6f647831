"""``python -m autograder grade ASSIGNMENT PATH --workers N --out DIR``: see
``autograder.platform.grade``."""

import sys

from autograder.platform.grade import main

sys.exit(main())
