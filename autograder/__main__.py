"""``python -m autograder grade ASSIGNMENT PATH --workers N --out DIR``: see autograder.grade."""

import sys

from autograder.grade import main

sys.exit(main())
