"""``python -m course doctor`` and ``python -m course handin``; see each module.

Nothing here imports more than the standard library before the chosen command starts, so the
doctor can judge an interpreter on which the course's packages are missing or fail to import.
"""

from __future__ import annotations

import sys

COMMANDS = {
    "doctor": "checks this computer and the course's install, and says how to fix each problem",
    "handin": "checks an assignment and writes the file to hand in",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print("usage: python -m course {doctor,handin} ...")
        for name, what in COMMANDS.items():
            print(f"  {name:<7} {what}")
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    if argv[0] == "doctor":
        from course import doctor

        return doctor.main(argv[1:])
    from course import handin

    return handin.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
