"""Config mergers: `todoledger install <agent>` adds our hooks and MCP server."""

from todoledger.install.files import FileChange, InstallResult
from todoledger.install.runner import AGENTS, run

__all__ = ["AGENTS", "FileChange", "InstallResult", "run"]
