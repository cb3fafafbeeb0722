"""Storage folders over fsspec: a local folder and S3 (moto's server on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubebench.errors import NotFoundError, StorageError
from kubebench.storage import Storage, join
from kubebench.storage.storage import MARKER


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    (folder / "output").mkdir(parents=True)
    (folder / "config").mkdir()
    (folder / "result").mkdir()
    (folder / "output" / "worker-0.log").write_text("hello\n")
    (folder / "config" / "params.yaml").write_text("bs: 8\n")
    return folder


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "shared")
    return request.getfixturevalue("s3") + "/prefix"


def test_a_folder_is_copied_listed_read_and_removed(root: str, run_folder: Path) -> None:
    storage = Storage(root)
    storage.check()
    assert json.loads(storage.read(MARKER)) == {"format": "kubebench-storage", "version": 1}
    target = storage.child("exp", "run-1")
    assert target.url == join(root, "exp", "run-1")
    (Path(run_folder) / "stale").write_text("x")
    target.replace_with(run_folder)
    (Path(run_folder) / "stale").unlink()
    assert target.replace_with(run_folder) == 2  # a redone run replaces the old copy
    assert target.files() == [("config/params.yaml", 6), ("output/worker-0.log", 6)]
    assert target.files("output") == [("output/worker-0.log", 6)]
    assert target.is_file("output/worker-0.log") and not target.is_file("output")
    assert target.read("output/worker-0.log") == b"hello\n"
    with pytest.raises(NotFoundError):
        target.read("output/missing.log")
    with pytest.raises(StorageError, match="leaves the run's folder"):
        target.read("../../other")
    assert storage.child("exp").remove() is True
    assert storage.child("exp").remove() is False
    assert [name for name, _ in storage.files()] == [MARKER]


def test_a_missing_bucket_is_a_clear_error(s3: str) -> None:
    with pytest.raises(StorageError, match="cannot write to it: .*bucket does not exist"):
        Storage(s3 + "-missing/prefix").check()


def test_an_unknown_protocol_lists_known_ones() -> None:
    with pytest.raises(StorageError, match=r"is not a storage URL .*known protocol \(s3, gs, "):
        Storage("nosuch://bucket/x")


def test_a_protocol_without_its_package_names_the_package() -> None:
    pytest.importorskip("fsspec")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        with pytest.raises(StorageError, match="gs:// needs gcsfs"):
            Storage("gs://bucket/x")
    else:
        pytest.skip("gcsfs is installed")


def test_a_read_only_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        target = tmp_path / "file-not-folder"
        target.write_text("x")  # root may write anywhere: use a path below a file instead
        url = str(target / "sub")
    else:
        (tmp_path / "ro").mkdir(mode=0o500)
        url = str(tmp_path / "ro" / "sub")
    with pytest.raises(StorageError, match="cannot write to it"):
        Storage(url).check()
