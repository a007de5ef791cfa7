"""Errors a user can cause and fix.

Every one carries a single line that names the file, field or setting at fault and what to do, so
the command line prints it without a traceback.
"""


class LanegraphError(Exception):
    """A problem the user can fix; its message is one line and is shown as is."""

    def __str__(self) -> str:
        # Messages quote user text (a YAML key, a file name) that may hold newlines or terminal
        # escapes; escaping them keeps the message one line and the terminal unharmed.
        return printable(super().__str__())


def printable(text: str) -> str:
    """`text` with every character a terminal would act on (newlines, ESC and the other C0 and C1
    controls, bidirectional overrides) written as its Python escape, so it prints on one line as is."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class ConfigError(LanegraphError):
    """lanes.yaml (or another settings file) is malformed or names something that does not exist."""


class DatabaseError(LanegraphError):
    """The database cannot be reached, started, or does not have what Lanegraph needs."""


class InputError(LanegraphError):
    """A document, question or command-line value cannot be used."""


# What to do after the server went away or ended the session in the middle of a command.
RETRY_ADVICE = (
    "once PostgreSQL is back (`lanegraph db start` for the embedded server), run the same command again"
)


def database_fault(error: BaseException) -> DatabaseError | None:
    """A database error that is no bug of ours (the server went away, ended the session, cancelled
    the statement, ran out of room or refused a value) as one line, or None for anything else.

    Looks psycopg up only when something has imported it: otherwise no error can come from it, and
    `lanegraph --help` stays free of it."""
    import sys

    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(error, psycopg.Error):
        return None
    reason = first_line_of(error)
    if isinstance(error, psycopg.errors.QueryCanceled):
        return DatabaseError(
            f"PostgreSQL cancelled the statement ({reason}): a statement timeout or an administrator; "
            "raise statement_timeout for this login, or run the command again"
        )
    if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
        return DatabaseError(f"lost the connection to PostgreSQL ({reason}); {RETRY_ADVICE}")
    if isinstance(error, (psycopg.DataError, psycopg.InternalError)):
        return DatabaseError(f"PostgreSQL refused the command ({reason})")
    return None


def first_line(text: str) -> str:
    """The first non-blank line of `text`, stripped; empty when it has none."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def first_line_of(error: BaseException) -> str:
    """An exception's message cut to its first non-blank line (PostgreSQL adds DETAIL and HINT lines)."""
    return first_line(str(error)) or type(error).__name__
