"""Compatibility: the client-side schemas now live in session_schema.py (the session's
fields) and client_events.py (the client events). The turn coordinator's modules still
import their names from here until their owner switches them (issue #49); then delete
this module."""

from app.protocol.client_events import *  # noqa: F403
from app.protocol.session_schema import *  # noqa: F403
