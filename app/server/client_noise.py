"""Keeps a client's mistake out of the server's error log.

uvicorn's WebSocket protocol logs a text frame that is not UTF-8 at ERROR with a
traceback (`logger.exception`), then closes the connection with 1007. The client got
its close code; the server did nothing wrong. One INFO line without the traceback says
what happened, so an operator's error alerts are not paged by any client's bad frames.
"""

from __future__ import annotations

import logging

UVICORN_LOGGER = "uvicorn.error"
INVALID_UTF8 = "Invalid UTF-8 sequence received from client."


class ClientNoiseFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == INVALID_UTF8:
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg = "a client sent a text frame that is not UTF-8; closed it with 1007"
            record.exc_info = record.exc_text = None
        return True


def install() -> None:
    """Once per process: on uvicorn's error logger (its handlers are uvicorn's to set)."""
    logger = logging.getLogger(UVICORN_LOGGER)
    if not any(isinstance(f, ClientNoiseFilter) for f in logger.filters):
        logger.addFilter(ClientNoiseFilter())
