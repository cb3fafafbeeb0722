"""A folder of shared storage, named by a local path or an fsspec URL (``s3://bucket/prefix``, ``gs://…``).

Backends are fsspec's registry of protocols: S3 needs ``s3fs`` (``kubebench[s3]``), GCS ``gcsfs``, and
so on; credentials come from each one's standard configuration (for S3 the ``AWS_*`` variables,
``AWS_ENDPOINT_URL`` included). Every error becomes a StorageError (NotFoundError for a missing
file) naming the URL, so that the CLI prints one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from ..errors import KubebenchError, NotFoundError, StorageError

STORAGE_FORMAT_VERSION = 1
#: Written at the root of a storage the first time kubebench uses it; holds the format version.
MARKER = ".kubebench-storage.json"
_COMMON = ("s3", "gs", "gcs", "az", "abfs", "hdfs", "sftp", "http", "https", "memory", "file")
_PACKAGES = {"s3": "s3fs (pip install 'kubebench[s3]')", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs",
             "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs"}


def is_local(url: str) -> bool:
    """Whether ``url`` names a folder of this machine (a path or ``file://``)."""
    return "://" not in url or url.startswith(("file://", "local://"))


def local_path(url: str) -> Path:
    """The folder a local ``url`` names."""
    for prefix in ("file://", "local://"):
        if url.startswith(prefix):
            url = url[len(prefix):]
    return Path(url).expanduser().resolve()


def join(url: str, *parts: str) -> str:
    """``url`` with path parts appended (``/``-separated, whatever the backend)."""
    return "/".join([url.rstrip("/"), *(p.strip("/") for p in parts)])


class Storage:
    """One folder (and what is under it) in shared storage."""

    def __init__(self, url: str) -> None:
        self.url = str(local_path(url)) if is_local(url) and "://" not in url else url.rstrip("/")
        self.fs, self.path = _filesystem(self.url)

    def child(self, *parts: str) -> "Storage":
        """The storage folder at ``parts`` below this one."""
        return Storage(join(self.url, *parts))

    def check(self) -> None:
        """Make sure kubebench can write here (before anything runs), marking the root on first use."""
        marker = f"{self.path}/{MARKER}"
        with self._errors("write to"):
            if self.fs.exists(marker):
                return
            if self._local:
                self.fs.makedirs(self.path, exist_ok=True)
            text = json.dumps({"format": "kubebench-storage", "version": STORAGE_FORMAT_VERSION})
            self.fs.pipe_file(marker, text.encode())

    def replace_with(self, folder: Path) -> int:
        """Make this storage folder a copy of the local ``folder`` (old contents removed); return files copied."""
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        targets = [f"{self.path}/{p.relative_to(folder).as_posix()}" for p in files]
        with self._errors("upload to"):
            if self.fs.exists(self.path):
                self.fs.rm(self.path, recursive=True)
            if self._local:
                for parent in {str(PurePosixPath(t).parent) for t in targets} | {self.path}:
                    self.fs.makedirs(parent, exist_ok=True)
            if files:
                self.fs.put([str(p) for p in files], targets)
        return len(files)

    def files(self, relative: str = "") -> list[tuple[str, int]]:
        """Every file below this folder (or below ``relative``): path relative to it, and size."""
        base = self._resolve(relative)
        with self._errors("list"):
            self.fs.invalidate_cache()
            found = self.fs.find(base, detail=True)
        prefix = self.path.rstrip("/") + "/"
        return [(name[len(prefix):] if name.startswith(prefix) else name, int(info.get("size") or 0))
                for name, info in sorted(found.items())]

    def is_file(self, relative: str) -> bool:
        """Whether ``relative`` names a file (not a folder) here."""
        with self._errors("read"):
            return self.fs.isfile(self._resolve(relative))

    def read(self, relative: str) -> bytes:
        """The bytes of the file at ``relative``."""
        with self._errors("read"):
            return self.fs.cat_file(self._resolve(relative))

    def remove(self) -> bool:
        """Delete this folder and everything under it; False if there was nothing."""
        with self._errors("delete"):
            if not self.fs.exists(self.path):
                return False
            self.fs.rm(self.path, recursive=True)
            return True

    @property
    def _local(self) -> bool:
        return "file" in _protocols(self.fs)

    def _resolve(self, relative: str) -> str:
        parts = PurePosixPath(relative.strip("/")).parts if relative.strip("/") else ()
        if ".." in parts:
            raise StorageError(f"path {relative!r} leaves the run's folder")
        return "/".join([self.path.rstrip("/"), *parts]) if parts else self.path

    @contextmanager
    def _errors(self, verb: str) -> Iterator[None]:
        try:
            yield
        except KubebenchError:
            raise
        except FileNotFoundError as e:
            raise _not_found(verb, self.url, e) from e
        except Exception as e:  # noqa: BLE001  (fsspec backends raise their own error types)
            raise StorageError(f"storage {self.url}: cannot {verb} it: {_message(e)}") from e


def _filesystem(url: str):
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)
    except ImportError as e:
        protocol = url.split("://", 1)[0]
        package = _PACKAGES.get(protocol, "its fsspec package")
        raise StorageError(f"storage {url!r}: {protocol}:// needs {package}: {e}") from e
    except ValueError as e:
        known = ", ".join(p for p in _COMMON if p in fsspec.available_protocols())
        raise StorageError(f"storage {url!r} is not a storage URL ({e}); give a local folder or a URL "
                           f"of a known protocol ({known}, … see fsspec.available_protocols())") from e


def _protocols(fs) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _not_found(verb: str, url: str, e: Exception) -> KubebenchError:
    text = _message(e)
    if "bucket" in text.lower():
        return StorageError(f"storage {url}: cannot {verb} it: {text}")
    return NotFoundError(f"storage {url}: nothing there to {verb} ({text})")


def _message(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
