"""Errors whose messages tell the user what to do next."""


class CuratorError(Exception):
    """A problem the user can fix; the CLI prints it as one line and exits 1."""


class NotAProject(CuratorError):
    pass


class NewerSchema(CuratorError):
    pass


class ModelFileError(CuratorError):
    pass


class InputError(CuratorError):
    """Bad user input (a file, a line, a flag value)."""
