"""Helpers of the data tests: checksums, archives to serve, specs with a data section."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tar_of(members: dict[str, bytes], mode: str = "w:gz") -> bytes:
    """A tar archive (gzip by default) of ``members`` (name → contents)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def zip_of(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()
