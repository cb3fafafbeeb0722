"""The files of a spec's folder that go with it to a cluster: the spec and every text file beside it
(parameters, templates, scripts), as the data of one ConfigMap (``kubebench deploy manifests --spec``,
and the Kubernetes backend when it gives job pods the spec's folder as their working directory)."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import SpecError

#: What the files may hold in all: a ConfigMap holds at most 1 MiB, its metadata included.
SPEC_FILES_MAX_BYTES = 900_000
#: A ConfigMap's keys (``IsConfigMapKey``): a file named otherwise cannot be one of its files.
_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")


def spec_files_of(spec: Path) -> dict[str, str]:
    """The spec and every text file beside it, by name. Hidden files, compiled Python, SQLite stores,
    binary files and names a ConfigMap cannot hold are left out; more than ``SPEC_FILES_MAX_BYTES``
    in all is a SpecError."""
    files = {spec.name: spec.read_text(encoding="utf-8")}
    for path in sorted(spec.parent.iterdir()):
        if path == spec or not path.is_file() or path.name.startswith(".") or path.suffix in (".pyc", ".db") \
                or not _KEY.match(path.name):
            continue
        try:
            files[path.name] = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files are not part of a spec
    total = sum(len(text.encode()) for text in files.values())
    if total > SPEC_FILES_MAX_BYTES:
        raise SpecError(f"{spec.parent}: the spec's folder holds {total} bytes of files, more than a ConfigMap "
                        f"takes ({SPEC_FILES_MAX_BYTES}): keep only the spec, its parameters, templates and "
                        "scripts there")
    return files
