"""The exception types the engine raises. Callers catch these, never library internals."""


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class ModelNotFoundError(EngineError):
    """The model name or path does not point at anything the engine can load."""


class ModelLoadError(EngineError):
    """The model exists but cannot be loaded (truncated file, unsupported architecture...)."""


class ConfigError(EngineError, ValueError):
    """The engine's configuration is not acceptable (EngineConfig fields, set_scheduling)."""


class InvalidRequestError(EngineError, ValueError):
    """A request's prompt or sampling parameters are not acceptable."""


class EngineBusyError(EngineError):
    """The engine refuses new work right now (waiting queue full); retry later."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
