"""The exception rfs raises."""


class RfsError(Exception):
    """An error of the rfs reader.

    ``code`` is the name of its status code (``NOT_FOUND``, ``DATA_LOSS``, ``INVALID_ARGUMENT``,
    ``FAILED_PRECONDITION``, ``UNIMPLEMENTED``, ...) and ``message`` says what failed, naming the
    repository blob, index or shard.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
