"""HTML pages, rendered from templates; their data comes from the JSON API."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
