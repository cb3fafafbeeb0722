"""Cache keys of datasets: what defines the data, hashed.

A fetched file's key is its URL (and where it lands) with its checksum: the same bytes from the
same place. A prepare step's key is its rendered command, image and environment with the digest of
each input file: the generator script changed, the data is made again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePath
from typing import Any

from ..errors import SpecError
from .plan import Fetch, Step

#: Hex digits of a key (80 bits: no two definitions meet by chance).
KEY_LENGTH = 20
_CHUNK = 1 << 20


def key_of(definition: dict[str, Any]) -> str:
    """The key of a definition (canonical JSON, hashed)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


def fetch_key(fetch: Fetch, sha256: str) -> str:
    """The key of a fetched file whose checksum is ``sha256``."""
    return key_of({**fetch.definition(), "sha256": sha256})


def step_key(step: Step, base_dir: Path) -> str:
    """The key of a prepare step: its definition and the digests of its inputs."""
    return key_of({**step.definition(), "inputs": input_digests(step, base_dir)})


def input_digests(step: Step, base_dir: Path) -> dict[str, str]:
    """SHA-256 of every input file of the step, by its path relative to the spec's folder: those its
    ``inputs`` name (globs; a folder stands for its files) and the command's arguments that name a
    file there."""
    files: set[Path] = set()
    root = base_dir.resolve()
    for pattern in step.inputs:
        if PurePath(pattern).is_absolute() or ".." in PurePath(pattern).parts:
            raise SpecError(f"data.prepare[{step.name}].inputs: {pattern!r} must be a path inside the spec's folder")
        matches = sorted(root.glob(pattern))
        if not matches:
            raise SpecError(f"data.prepare[{step.name}].inputs: {pattern!r} matches no file in {root}")
        for match in matches:
            files.update(p for p in ([match] if match.is_file() else match.rglob("*")) if p.is_file())
    for arg in step.command:
        candidate = PurePath(arg)
        if arg and not candidate.is_absolute() and ".." not in candidate.parts and (root / candidate).is_file():
            files.add(root / candidate)
    try:
        return {p.relative_to(root).as_posix(): file_sha256(p) for p in sorted(files)}
    except OSError as e:
        raise SpecError(f"data.prepare[{step.name}]: cannot read its input {e.filename}: {e.strerror or e}") from e


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
