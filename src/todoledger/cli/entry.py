"""Console entry point. `todoledger hook ...` is dispatched without importing
click or rich: agents call hooks on every tool use, so start-up is the cost."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "hook":
        from todoledger.hooks import run_hook

        sys.exit(run_hook(args[1:]))
    from todoledger.cli.main import cli

    cli.main(args, prog_name="todoledger")


if __name__ == "__main__":
    main()
