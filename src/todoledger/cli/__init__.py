"""The command line: the agent verbs without click (`lean.py`) and the click commands (`main.py`, `cmd_*.py`)."""
