"""``python -m desync ARGS``: run the ``desync`` command with ARGS (same exit code)."""

from __future__ import annotations

import os
import sys

from desync import find_desync_bin


def main() -> None:
    try:
        exe = find_desync_bin()
    except FileNotFoundError as exc:
        sys.stderr.write(f"desync: {exc}\n")
        raise SystemExit(2) from None
    # Replace this process: signals, the exit code and the terminal go to desync directly.
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
