"""Session reports: GET /v1/r1voice/sessions (recent sessions, newest first, with their ids
as `session.created` gave them) and GET /v1/r1voice/sessions/{id} (its items, its turns
with each stage's times, the recording's URL when recorded). Made of the sessions' own
spans (app/telemetry/reports.py); GET .../{id}/recording its recording (WAV). Guarded by
the API key like every route (access.py)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse, JSONResponse

from app.server.state import HttpState

router = APIRouter(prefix="/v1/r1voice", tags=["sessions"])


def _off() -> JSONResponse:
    message = "session reports are off (R1VOICE_SESSION_REPORTS=0); set it to keep some"
    return JSONResponse(
        {"error": {"message": message, "type": "invalid_request_error", "code": "reports_off"}},
        status_code=404,
    )


def _not_found(message: str, code: str) -> JSONResponse:
    error = {"message": message, "type": "invalid_request_error", "param": "session_id"}
    return JSONResponse({"error": {**error, "code": code}}, status_code=404)


@router.get("/sessions")
async def list_sessions(state: HttpState) -> JSONResponse:
    reports = state.telemetry.reports
    if reports is None:
        return _off()
    data = [report.summary() for report in reports.recent()]
    return JSONResponse({"object": "list", "data": data, "keep": reports.keep})


@router.get("/sessions/{session_id}")
async def get_session(session_id: str, state: HttpState) -> JSONResponse:
    reports = state.telemetry.reports
    if reports is None:
        return _off()
    report = reports.get(session_id)
    if report is None:
        message = (
            f"no session '{session_id}' among the {reports.keep} most recent ones kept "
            "(R1VOICE_SESSION_REPORTS); list them at GET /v1/r1voice/sessions"
        )
        return _not_found(message, "session_not_found")
    return JSONResponse(report.to_wire())


@router.get("/sessions/{session_id}/recording", response_model=None)
async def get_recording(session_id: str, state: HttpState) -> FileResponse | JSONResponse:
    """The session's recording: stereo WAV, the user left, the assistant right."""
    store = state.telemetry.recordings
    path = store.path(session_id) if store is not None else None
    if path is None:
        where = "R1VOICE_RECORD_SESSIONS is off" if store is None else "none was written"
        message = f"no recording of session '{session_id}' ({where})"
        return _not_found(message, "recording_not_found")
    return FileResponse(path, media_type="audio/wav", filename=f"{session_id}.wav")
