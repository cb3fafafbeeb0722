"""Sequential decisions in the dashboard: an experiment's trials decided against a base (``kubebench
run --decide-against``) — verdict, runs taken, intervals — as JSON for its page, which shows them
with the words the terminal uses (:mod:`kubebench.present.decisions`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path as RoutePath, Request
from pydantic import AfterValidator, BaseModel

from .. import ids
from ..present.decisions import change_text, decision_line, design_text, runs_text, summary

router = APIRouter()
ExperimentId = Annotated[str, RoutePath(description=f"experiment id: {ids.RULE}"),
                         AfterValidator(ids.validator("experiment id"))]


class Decisions(BaseModel):
    """An experiment's sequential decisions (empty when it was not run with ``--decide-against``)."""

    experiment_id: str
    against: str
    metric: str
    summary: str
    design: str
    decisions: list[dict[str, Any]]


@router.get("/api/experiments/{experiment_id}/decisions", response_model=Decisions, tags=["api"])
def decisions(request: Request, experiment_id: ExperimentId) -> dict:
    """Each trial's decision: verdict, runs it took (of at most), change with its interval, and why."""
    found = request.app.state.store.decisions(experiment_id)
    first = found[0] if found else None
    return {"experiment_id": experiment_id, "against": first.against if first else "",
            "metric": first.metric if first else "", "summary": summary(found) if found else "",
            "design": design_text(first) if first else "",
            "decisions": [{**d.model_dump(), "change": d.change, "change_text": change_text(d),
                           "runs_text": runs_text(d), "line": decision_line(d)} for d in found]}
