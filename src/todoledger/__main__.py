"""`python -m todoledger`: the `todoledger` command, where only the interpreter is at hand
(a venv not activated, a CI step): the same entry as the installed script."""

from todoledger.cli.entry import main

if __name__ == "__main__":
    main()  # it exits with the command's own status
