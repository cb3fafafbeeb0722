"""The cache of a data root: a dataset is ready only when its marker names its key and its files
are all there; its lock is held by one process at a time and taken over when its holder dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.timing import scaled, wait_for

import kubebench
from kubebench.data.cache import DataCache, Marker, tree_digest, tree_stats
from kubebench.errors import BusyError, StorageError


def marker(cache: DataCache, name: str = "digits", key: str = "k1") -> Marker:
    stats = tree_stats(cache.folder(name))
    return Marker(name=name, key=key, checksum="sha256:" + "0" * 64, source="url", origin="https://h/d.tar",
                  files=stats.files, bytes=stats.bytes, prepared_at=time.time(), prepare_seconds=1.5)


def filled(tmp_path: Path) -> DataCache:
    cache = DataCache(tmp_path / "data")
    (cache.folder("digits") / "train").mkdir(parents=True)
    (cache.folder("digits") / "train" / "0.txt").write_text("zero")
    (cache.folder("digits") / "1.txt").write_text("one!")
    return cache


def test_ready_only_for_its_key_with_all_its_files(tmp_path: Path) -> None:
    cache = filled(tmp_path)
    assert cache.ready("digits", "k1") is None  # no marker: not ready, whatever the folder holds
    cache.mark(marker(cache))
    found = cache.ready("digits", "k1")
    assert found is not None and (found.files, found.bytes) == (2, 8)
    assert cache.ready("digits", "k2") is None  # another key
    (cache.folder("digits") / "1.txt").write_text("one")  # a file changed size
    assert cache.ready("digits", "k1") is None
    (cache.folder("digits") / "1.txt").write_text("one!")
    (cache.folder("digits") / "train" / "0.txt").unlink()  # a file gone
    assert cache.ready("digits", "k1") is None


def test_an_unreadable_marker_is_not_ready(tmp_path: Path) -> None:
    cache = filled(tmp_path)
    cache.mark(marker(cache))
    path = cache.meta / "digits.json"
    text = path.read_text()
    path.write_text(text[:-10])  # cut short
    assert cache.ready("digits", "k1") is None
    path.write_text(json.dumps({**json.loads(text), "version": 99}))  # a format this kubebench does not know
    assert cache.marker("digits") is None
    path.write_text(text)
    assert cache.ready("digits", "k1") is not None


def test_invalidate_unmarks_first_then_empties(tmp_path: Path) -> None:
    cache = filled(tmp_path)
    cache.mark(marker(cache))
    cache.invalidate("digits")
    assert not cache.folder("digits").exists() and cache.marker("digits") is None
    cache.invalidate("digits")  # nothing there: nothing to do


def test_names_lists_marked_and_unmarked_folders(tmp_path: Path) -> None:
    cache = filled(tmp_path)
    (cache.root / "half").mkdir()
    (cache.root / "Not-A-Name").mkdir()
    cache.mark(marker(cache))
    assert cache.names() == ["digits", "half"]
    assert DataCache(tmp_path / "none").names() == []


def test_remove_deletes_folder_marker_and_partial_download(tmp_path: Path) -> None:
    cache = filled(tmp_path)
    cache.mark(marker(cache))
    cache.partial("k1").parent.mkdir(parents=True)
    cache.partial("k1").write_bytes(b"part")
    assert cache.remove("digits") is True
    assert not cache.folder("digits").exists() and not cache.partial("k1").exists() and cache.names() == []
    assert cache.remove("digits") is False


def test_tree_digest_covers_names_and_contents(tmp_path: Path) -> None:
    cache = filled(tmp_path)
    first = tree_digest(cache.folder("digits"))
    assert first.startswith("tree-sha256:") and first == tree_digest(cache.folder("digits"))
    (cache.folder("digits") / "1.txt").rename(cache.folder("digits") / "2.txt")
    assert tree_digest(cache.folder("digits")) != first


def test_a_held_lock_makes_the_next_one_wait(tmp_path: Path) -> None:
    cache = DataCache(tmp_path / "data")
    told: list[str] = []
    order: list[str] = []
    with cache.lock("digits", holder="experiment a"):
        with pytest.raises(BusyError, match=r"dataset 'digits' is being prepared by experiment a \(pid \d+\)"):
            with cache.lock("digits", wait=False):
                pass

        def second() -> None:
            with cache.lock("digits", holder="experiment b", waiting=told.append):
                order.append("b")

        thread = threading.Thread(target=second)
        thread.start()
        wait_for(lambda: told, scaled(5))
        time.sleep(0.3)
        order.append("a")
    thread.join(scaled(5))
    assert order == ["a", "b"]
    assert told == [f"dataset digits: waiting for experiment a (pid {os.getpid()}), which is preparing it"]


HOLD = """
import sys, time
from pathlib import Path
from kubebench.data.cache import DataCache
with DataCache(Path(sys.argv[1])).lock("digits", holder="experiment killed"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_killed_holders_lock_is_taken_over(tmp_path: Path) -> None:
    src = str(Path(kubebench.__file__).resolve().parents[1])
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "data")], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": src})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        cache = DataCache(tmp_path / "data")
        with pytest.raises(BusyError, match="experiment killed"):
            with cache.lock("digits", wait=False):
                pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(scaled(10))
        with cache.lock("digits", wait=False):  # the system let go of the dead holder's lock
            assert (cache.meta / "digits.lock").read_text() == f"kubebench (pid {os.getpid()})\n"
    finally:
        holder.kill()
        holder.wait()


def test_an_unwritable_data_root_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(StorageError, match=r"dataset digits: cannot write its lock"):
        with DataCache(tmp_path / "file").lock("digits"):
            pass
