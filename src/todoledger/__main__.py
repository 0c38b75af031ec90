"""`python -m todoledger`: the `todoledger` command, where only the interpreter is at hand
(a venv not activated, a CI step): the same entry as the installed script."""

import sys

from todoledger.cli.entry import main

if __name__ == "__main__":
    sys.exit(main())
