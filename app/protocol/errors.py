"""The one exception of the wire layer: a client event we refuse."""

from __future__ import annotations


class ProtocolError(Exception):
    """A client event we refuse; becomes an `error` event and the session goes on.

    `code` is the Realtime error code, `message` says what was wrong and what to do,
    `param` names the offending field.
    """

    def __init__(
        self, code: str, message: str, *, param: str | None = None, event_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param
        self.event_id = event_id  # the client's, when the event got as far as having one
