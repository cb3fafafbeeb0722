"""Base models shared by the spec and by plugins' option models (kept free of plugin imports)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Base of user-written models: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class PluginConfig(Model):
    """Base of the options of a plugin chosen by ``kind``."""

    kind: str
