"""Errors a user can cause and fix.

Every one carries a single line that names the file, field or setting at fault and what to do, so
the command line prints it without a traceback.
"""


class LanegraphError(Exception):
    """A problem the user can fix; its message is one line and is shown as is."""

    def __str__(self) -> str:
        # Messages quote user text (a YAML key, a file name) that may hold newlines or terminal
        # escapes; escaping them keeps the message one line and the terminal unharmed.
        return "".join(c if c.isprintable() else repr(c)[1:-1] for c in super().__str__())


class ConfigError(LanegraphError):
    """lanes.yaml (or another settings file) is malformed or names something that does not exist."""


class DatabaseError(LanegraphError):
    """The database cannot be reached, started, or does not have what Lanegraph needs."""


class InputError(LanegraphError):
    """A document, question or command-line value cannot be used."""


def first_line_of(error: BaseException) -> str:
    """An exception's message cut to its first non-blank line (PostgreSQL adds DETAIL and HINT lines)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
