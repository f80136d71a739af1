"""The page at `/` and its static files."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

WEB_DIR = Path(__file__).resolve().parents[3] / "web"
STATIC_DIR = Path(__file__).resolve().parents[3] / "static"

router = APIRouter(tags=["page"])


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    return FileResponse(WEB_DIR / "index.html", media_type="text/html")
