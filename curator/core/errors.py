"""Errors whose messages tell the user what to do next."""


class CuratorError(Exception):
    """A problem the user can fix; the CLI prints it as one line and exits 1."""


class NotAProject(CuratorError):
    pass


class NewerSchema(CuratorError):
    pass


class ProjectNotWritable(CuratorError):
    """A project SQLite cannot write (read-only file, folder or mount; a full disk); the file is intact."""


class ModelFileError(CuratorError):
    pass


class InputError(CuratorError):
    """Bad user input (a file, a line, a flag value)."""


class BadOption(InputError):
    """A value no run could accept (``--mix bogus``, split fractions that do not sum to 1): the CLI
    reports it as a usage error (exit 2, click's convention) naming ``option``."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


class NothingToGenerate(CuratorError):
    """A generation run that could not ask the model anything (no chunks, or every chunk already
    used for the types wanted): refused before the model is loaded, with the reason and the fix."""
