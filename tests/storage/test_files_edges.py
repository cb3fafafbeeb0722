"""The file browser's answers at their edges (issue #20: mutants of ``kubebench.storage.files`` no test
killed): what a listing holds and the paths it gives, the status and message of each refusal, links
written with absolute targets, descriptors closed once, and remote folders read through fsspec
(``memory://``) listed and served like local ones, up to the size served."""

from __future__ import annotations

import errno
import os
import socket
import uuid
from pathlib import Path

import fsspec
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from kubebench.errors import NotFoundError, PathRefused
from kubebench.storage import files
from kubebench.storage.files import Entry

RUN_JSON = b'{"status": "succeeded"}\n'
LOG = b"step 1\nstep 2\n"


def refusal(call, *args) -> tuple[int, str]:
    with pytest.raises(PathRefused) as caught:
        call(*args)
    return caught.value.status, str(caught.value)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A finished run's folder: two folders, a file, and a link to a log."""
    folder = tmp_path / "run-1"
    (folder / "output").mkdir(parents=True)
    (folder / "result").mkdir()
    (folder / "output" / "worker-0.log").write_bytes(LOG)
    (folder / "run.json").write_bytes(RUN_JSON)
    (folder / "latest.log").symlink_to(Path("output", "worker-0.log"))
    return folder


# -- local folders ----------------------------------------------------------------------------------

def test_the_run_folder_is_listed_folders_first_with_paths_from_its_root(run: Path) -> None:
    assert files.list_folder(str(run), "") == [
        Entry("output", "output", True, 0), Entry("result", "result", True, 0),
        Entry("latest.log", "latest.log", False, len(LOG)), Entry("run.json", "run.json", False, len(RUN_JSON))]
    assert files.list_folder(str(run), "output") == [Entry("worker-0.log", "output/worker-0.log", False, len(LOG))]


def test_a_file_is_no_folder_and_a_missing_path_is_not_there(run: Path) -> None:
    assert refusal(files.list_folder, str(run), "run.json") == (404, "no folder 'run.json' in this run")
    assert refusal(files.list_folder, str(run), "output/nope") == (404, "no file or folder 'output/nope' in this run")
    assert refusal(files.open_local, str(run), "run.json/x") == (404, "no file or folder 'run.json/x' in this run")


def test_a_socket_in_the_run_folder_is_refused_as_unreadable(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(run / "output")  # bound by a relative name: a socket's path is limited to 108 bytes
    with socket.socket(socket.AF_UNIX) as agent:
        agent.bind("agent.sock")
        assert refusal(files.open_local, str(run), "output/agent.sock") == (
            403, f"path refused: 'output/agent.sock' cannot be read ({os.strerror(errno.ENXIO)})")
        assert [e.name for e in files.list_folder(str(run), "output")] == ["worker-0.log"]


def test_an_opened_descriptor_is_closed_once_even_descriptor_0(run: Path) -> None:
    """A server started with stdin closed gets descriptor 0 for a file too: it is closed like the others,
    and an Opened exited twice closes nothing the second time."""
    saved = os.dup(0)
    try:
        fd = os.open(run / "run.json", os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
        opened = files.Opened(0)
        assert opened.is_file and opened.stat.st_size == len(RUN_JSON)
        opened.__exit__()
        assert opened.fd == -1
        with pytest.raises(OSError) as closed:
            os.fstat(0)
        assert closed.value.errno == errno.EBADF
        opened.__exit__()
        assert opened.fd == -1
    finally:
        os.dup2(saved, 0)
        os.close(saved)


@pytest.mark.parametrize("name", ["results X", "results "], ids=["ends-in-X", "ends-in-space"])
def test_absolute_links_inside_the_run_are_followed_whatever_the_folder_s_name(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    (folder / "output").mkdir(parents=True)
    (folder / "XLA.dump").write_bytes(b"hlo\n")
    (folder / "output" / "dump").symlink_to(folder / "XLA.dump")
    (folder / "output" / "home").symlink_to(folder)
    with files.open_local(str(folder), "output/dump") as opened:
        assert opened.is_file and os.pread(opened.fd, 10, 0) == b"hlo\n"
    assert [e.name for e in files.list_folder(str(folder), "output/home")] == ["output", "XLA.dump"]


def test_a_link_replaced_while_it_is_walked_is_refused(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job replaces ``latest.log`` between the walk's open (a link) and its readlink (no link any more):
    the race is made certain by doing the job's replacement inside ``os.readlink``."""
    readlink = os.readlink

    def replaced_first(path, *, dir_fd=None):
        if dir_fd is not None and path == "latest.log":
            os.unlink(path, dir_fd=dir_fd)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, dir_fd=dir_fd))
        return readlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "readlink", replaced_first)
    assert refusal(files.open_local, str(run), "latest.log") == (403, "path refused: it resolves outside the run's folder")


# -- remote folders (fsspec) ------------------------------------------------------------------------

@pytest.fixture
def remote():
    """A run's folder in fsspec's in-memory storage, removed afterwards."""
    fs = fsspec.filesystem("memory")
    bucket = f"memory://kb-{uuid.uuid4().hex}"
    url = f"{bucket}/run-1"
    fs.pipe_file(f"{url}/run.json", RUN_JSON)
    fs.pipe_file(f"{url}/output/worker-0.log", LOG)
    fs.pipe_file(f"{url}/output/data/part-0", b"0123456789")
    fs.pipe_file(f"{url}/output//stray", b"an empty path component, as object stores allow")
    yield url
    fs.rm(bucket, recursive=True)


def test_a_remote_run_folder_is_listed_like_a_local_one(remote: str) -> None:
    assert files.list_folder(remote, "") == [
        Entry("output", "output", True, 0), Entry("run.json", "run.json", False, len(RUN_JSON))]
    assert files.list_folder(remote, "output") == [
        Entry("data", "output/data", True, 0), Entry("worker-0.log", "output/worker-0.log", False, len(LOG))]


def test_a_remote_path_that_is_no_folder_is_404(remote: str) -> None:
    assert refusal(files.list_folder, remote, "nope") == (404, "no folder 'nope' in this run")
    # a file is no folder (fsspec lists a file as itself: it was listed as a folder of its own first part)
    assert refusal(files.list_folder, remote, "output/worker-0.log") == (404, "no folder 'output/worker-0.log' in this run")


@pytest.mark.parametrize("path", ["", "output", "output/nope"])
def test_only_a_remote_file_is_served(remote: str, path: str) -> None:
    assert refusal(files.read_remote, remote, path) == (404, f"no file {path!r} in this run")
    assert files.read_remote(remote, "output/worker-0.log") == LOG


def test_a_remote_file_is_served_up_to_64_mib(remote: str) -> None:
    fs = fsspec.filesystem("memory")
    assert files.MAX_REMOTE_BYTES == 64 * 2**20
    fs.pipe_file(f"{remote}/output/limit.bin", bytes(files.MAX_REMOTE_BYTES))
    fs.pipe_file(f"{remote}/output/big.bin", bytes(files.MAX_REMOTE_BYTES + 1))
    assert len(files.read_remote(remote, "output/limit.bin")) == files.MAX_REMOTE_BYTES
    assert refusal(files.read_remote, remote, "output/big.bin") == (
        413, "output/big.bin is larger than 64 MiB: download it from the storage")


class Vanishing(MemoryFileSystem):
    """In-memory storage where a file is removed right after it is found to be one (a job's cleanup
    racing the browser)."""

    protocol = "kbvanishing"

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(str(path).removeprefix("kbvanishing://"))

    def isfile(self, path) -> bool:
        found = super().isfile(path)
        if found:
            self.rm_file(path)
        return found


def test_a_remote_file_removed_while_it_is_served_is_not_found(remote: str) -> None:
    fsspec.register_implementation(Vanishing.protocol, Vanishing, clobber=True)
    url = remote.replace("memory://", "kbvanishing://")
    with pytest.raises(NotFoundError, match="nothing there to read"):
        files.read_remote(url, "output/worker-0.log")
