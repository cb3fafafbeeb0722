"""Fetch a dataset's file through fsspec (a path, ``file://``, ``s3://``, ``gs://``, ``https://`` …),
resumably, verify its SHA-256, and unpack it when it is an archive.

The bytes accumulate in a partial file of the data root (``.kubebench/partial/<key>``): an attempt
that stopped (a timeout, a reset connection, a killed runner, a full disk) leaves it, and the next
attempt asks only for the rest (a range request; from the start where the server cannot). A file
whose checksum differs is deleted, never unpacked.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import tarfile
import time
import zipfile
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from ..errors import DataError
from .keys import file_sha256
from .plan import Fetch
from .progress import Meter

log = logging.getLogger("kubebench")
CHUNK = 4 << 20
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
#: Seconds before the second attempt of a download; doubled for each further one, up to the cap.
RETRY_DELAY_S, RETRY_DELAY_MAX_S = 1.0, 30.0
#: Errors of writing here that no retry mends.
_LOCAL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


class _Permanent(Exception):
    """A failure no further attempt mends (not found, refused, a full disk)."""


def resolve_url(url: str, base_dir: Path) -> str:
    """``url`` as fsspec takes it: a relative local path is relative to the spec's folder."""
    if "://" in url:
        return url
    path = Path(url).expanduser()
    return str(path if path.is_absolute() else (base_dir / path).resolve())


def file_name(url: str) -> str:
    """The last part of the URL's path (its query left out)."""
    return PurePosixPath(urlsplit(url).path if "://" in url else url).name or "data"


def expected_sha256(fetch: Fetch, base_dir: Path) -> str:
    """The checksum the file must have: given, or its line in the checksums file."""
    if fetch.sha256 is not None:
        return fetch.sha256
    assert fetch.checksums is not None  # the spec model requires one of the two
    url = resolve_url(fetch.checksums, base_dir)
    try:
        text = _read_small(url, fetch.timeout)
    except _Permanent as e:
        raise DataError(f"dataset {fetch.name}: cannot read its checksums file {url}: {e}") from e
    wanted = file_name(fetch.url)
    for line in text.splitlines():
        found = _checksum_line(line)
        if found and found[1] == wanted:
            return found[0]
    raise DataError(f"dataset {fetch.name}: its checksums file {url} has no SHA-256 line for {wanted!r}")


def _checksum_line(line: str) -> tuple[str, str] | None:
    """``<hex>  <name>`` (sha256sum; ``*name`` in binary mode) or ``SHA256 (<name>) = <hex>`` (BSD)."""
    line = line.strip()
    if line.startswith("SHA256 (") and ") = " in line:
        name, _, digest = line[len("SHA256 ("):].rpartition(") = ")
        return digest.strip().lower(), PurePosixPath(name).name
    parts = line.split(None, 1)
    if len(parts) == 2 and len(parts[0]) == 64:
        return parts[0].lower(), PurePosixPath(parts[1].lstrip("*").strip()).name
    return None


def fetch_into(fetch: Fetch, base_dir: Path, folder: Path, partial: Path, expected: str, meter: Meter) -> None:
    """:func:`download` then :func:`unpack` into ``folder`` (made if missing)."""
    download(fetch, base_dir, partial, expected, meter)
    folder.mkdir(parents=True, exist_ok=True)
    unpack(fetch, partial, folder)


def download(fetch: Fetch, base_dir: Path, partial: Path, expected: str, meter: Meter) -> None:
    """Download the file into ``partial`` (resuming what it holds) and verify it; DataError naming the
    dataset when it cannot. Nothing but ``partial`` is written: the dataset's folder is untouched."""
    url = resolve_url(fetch.url, base_dir)
    attempt = 1
    while True:
        try:
            _download(url, partial, fetch.timeout, meter, fetch.name)
            break
        except _Permanent as e:
            raise DataError(f"dataset {fetch.name}: cannot fetch {url}: {e}") from e
        except Exception as e:  # noqa: BLE001  (each fsspec backend has its own errors: transient until proven not)
            if attempt > fetch.retries:
                kept = " (what arrived is kept: the next try resumes it)" if partial.exists() else ""
                raise DataError(f"dataset {fetch.name}: cannot fetch {url}: {_message(e)}, "
                                f"after {attempt} attempt{'s' if attempt > 1 else ''}{kept}") from e
            log.warning("dataset %s: fetching %s failed (%s); trying again", fetch.name, url, _message(e))
            time.sleep(min(RETRY_DELAY_S * 2 ** (attempt - 1), RETRY_DELAY_MAX_S))
            attempt += 1
    actual = file_sha256(partial)
    if actual != expected:
        partial.unlink(missing_ok=True)
        raise DataError(f"dataset {fetch.name}: checksum mismatch for {url}: expected sha256 {expected}, "
                        f"got {actual} (the file was deleted; is the URL or the checksum wrong?)")


def unpack(fetch: Fetch, partial: Path, folder: Path) -> None:
    """The verified file into ``folder`` (its ``into``): unpacked, or moved; the partial file removed."""
    try:
        place(partial, folder / fetch.into if fetch.into else folder, file_name(fetch.url), fetch.unpack)
    except OSError as e:
        raise DataError(f"dataset {fetch.name}: cannot write it to {folder}: {e.strerror or e}") from e
    except (tarfile.TarError, zipfile.BadZipFile, _Permanent) as e:
        raise DataError(f"dataset {fetch.name}: cannot unpack {file_name(fetch.url)}: {e}") from e
    partial.unlink(missing_ok=True)


def _download(url: str, partial: Path, timeout: float, meter: Meter, name: str) -> None:
    fs, path = _filesystem(url, timeout)
    try:
        size = fs.size(path)
    except FileNotFoundError as e:
        raise _Permanent(f"not found ({_message(e)})") from e
    except PermissionError as e:
        raise _Permanent(f"access refused ({_message(e)})") from e
    have = partial.stat().st_size if partial.exists() else 0
    if size is not None and have > size:  # the remote file changed: the part we have is not of it
        have = 0
    meter.start(name, size, have)
    try:
        if size is not None and have == size:
            return
        try:
            _copy(fs, path, partial, have, meter)
        except ValueError:  # the server cannot serve a range (fsspec): start again from the first byte
            if not have:
                raise
            log.warning("dataset %s: %s cannot resume a download; starting it again", name, url)
            _copy(fs, path, partial, 0, meter)
    finally:
        meter.finish()


def _copy(fs, path: str, partial: Path, offset: int, meter: Meter) -> None:
    partial.parent.mkdir(parents=True, exist_ok=True)
    with fs.open(path, "rb", block_size=CHUNK, cache_type="none") as source:
        if offset:
            source.seek(offset)
        with open(partial, "r+b" if offset else "wb") as out:
            if offset:
                out.seek(offset)
                out.truncate()
            while chunk := _read(source):
                try:
                    out.write(chunk)
                except OSError as e:
                    if e.errno in _LOCAL_ERRNOS:
                        raise _Permanent(f"cannot write {partial}: {e.strerror} "
                                         "(what arrived is kept: the next try resumes it)") from e
                    raise
                meter.advance(len(chunk))


def _read(source) -> bytes:
    try:
        return source.read(CHUNK)
    except FileNotFoundError as e:
        raise _Permanent(f"not found ({_message(e)})") from e
    except Exception as e:
        status = getattr(e, "status", None)  # aiohttp's ClientResponseError
        if isinstance(status, int) and 400 <= status < 500 and status not in (408, 429):
            raise _Permanent(f"HTTP {status}: {_message(e)}") from e
        raise


def _read_small(url: str, timeout: float, limit: int = 1 << 20) -> str:
    fs, path = _filesystem(url, timeout)
    try:
        with fs.open(path, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError as e:
        raise _Permanent(f"not found ({_message(e)})") from e
    except Exception as e:  # noqa: BLE001
        raise _Permanent(_message(e)) from e
    if len(data) > limit:
        raise _Permanent(f"larger than {limit} bytes: not a checksums file")
    return data.decode("utf-8", errors="replace")


def _filesystem(url: str, timeout: float):
    import fsspec

    protocol = url.split("://", 1)[0] if "://" in url else "file"
    try:
        return fsspec.core.url_to_fs(url, **_options(protocol, timeout))
    except ImportError as e:
        raise _Permanent(f"{protocol}:// needs its fsspec package ({_message(e)})") from e
    except ValueError as e:
        raise _Permanent(f"not a URL fsspec knows ({_message(e)})") from e


def _options(protocol: str, timeout: float) -> dict:
    """Each client's own setting for how long it waits on a silent server (the default: forever)."""
    if protocol in ("http", "https"):
        import aiohttp

        return {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=None, sock_connect=timeout,
                                                                   sock_read=timeout)}}
    if protocol in ("s3", "s3a"):
        return {"config_kwargs": {"connect_timeout": timeout, "read_timeout": timeout}}
    return {}


def place(file: Path, target: Path, name: str, unpack: bool) -> None:
    """Unpack ``file`` into ``target`` when it is an archive (tar: only regular files and folders,
    nothing outside; zip: no absolute or ``..`` names), else move it there as ``name``."""
    target.mkdir(parents=True, exist_ok=True)
    lower = name.lower()
    if unpack and lower.endswith(TAR_SUFFIXES):
        with tarfile.open(file) as archive:
            archive.extractall(target, filter="data")
    elif unpack and lower.endswith(".zip"):
        with zipfile.ZipFile(file) as archive:
            for member in archive.namelist():
                parts = PurePosixPath(member.replace("\\", "/")).parts
                if member.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                    raise _Permanent(f"the archive holds {member!r}, outside the dataset's folder")
            archive.extractall(target)
    elif file.parent.stat().st_dev == target.stat().st_dev:
        os.replace(file, target / name)  # the partial file is in the data root: usually a rename
    else:
        shutil.copyfile(file, target / name)


def _message(e: BaseException) -> str:
    if isinstance(e, TimeoutError):
        return "timed out (no data within the dataset's timeout)"
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
