"""The base of every exception localrag defines.

What the user is told is ``str(exc)``: ``describe_error`` (localrag/commands/common.py) maps every
LocalragError that reaches the command line, or an MCP tool's reply, to that one line and the
class's ``exit_code``. A class whose raiser always catches it (a signal inside a phase, or an
error a command turns into a UsageError or UserError of its own) sets ``internal``: one that
escapes anyway is a bug, and is described as one.
"""

from __future__ import annotations

from typing import ClassVar

USAGE_EXIT = 2  # the command line itself is wrong (argparse uses 2 too)
FAILURE_EXIT = 1  # the command was right but could not be carried out


class LocalragError(Exception):
    """An error whose message, ``str(exc)``, is meant for the user: one line, no traceback."""

    exit_code: ClassVar[int] = FAILURE_EXIT
    internal: ClassVar[bool] = False  # always caught where it is raised; reaching the command line is a bug
