"""The JSON API under ``/api`` (documented at ``/docs``)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(prefix="/api", tags=["api"])
