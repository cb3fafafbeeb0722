"""The file browser's rules at their edges, second pass (issue #20: mutants of ``kubebench.storage.files``
that survived): which characters and forms a path may have and the message of each refusal, a run
folder's name ending in a character that a path's separator strip must keep, link targets with empty,
``.`` and ``..`` components or spaces, the link count that makes a loop, a folder moved out of the run
while it is walked, a run with no folder (or a file as its folder), and a detached descriptor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubebench.errors import PathRefused
from kubebench.storage import files
from kubebench.storage.files import Entry

RUN_JSON = b'{"status": "succeeded"}\n'
LOG = b"step 1\nstep 2\n"
OUTSIDE = "path refused: it resolves outside the run's folder"


def refusal(call, *args) -> tuple[int, str]:
    with pytest.raises(PathRefused) as caught:
        call(*args)
    return caught.value.status, str(caught.value)


def served(run: Path, relative: str) -> bytes:
    """The bytes of the file ``relative`` of the run, as the browser opens it."""
    with files.open_local(str(run), relative) as opened:
        assert opened.is_file
        return os.pread(opened.fd, 1 << 16, 0)


def make_run(folder: Path) -> Path:
    (folder / "output" / "data").mkdir(parents=True)
    (folder / "output" / "worker-0.log").write_bytes(LOG)
    (folder / "run.json").write_bytes(RUN_JSON)
    return folder


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A finished run's folder: ``output/worker-0.log``, an empty ``output/data`` and ``run.json``."""
    return make_run(tmp_path / "run-1")


# -- checked: what a path may hold ------------------------------------------------------------------

@pytest.mark.parametrize(("path", "clean"), [
    ("my results/run log.txt", "my results/run log.txt"),  # a space is no control character
    ("output//worker-0.log", "output/worker-0.log"),
    ("./output/./worker-0.log", "output/worker-0.log"),
    ("output/", "output"),
    ("XX/XX/run.json", "XX/XX/run.json"),
    ("caf\u00e9/\u0080", "caf\u00e9/\u0080"),  # beyond ASCII, even U+0080, is a name like any other
])
def test_a_clean_path_keeps_its_names_and_drops_empty_and_dot_components(path: str, clean: str) -> None:
    assert files.checked(path) == clean


@pytest.mark.parametrize(("path", "why"), [
    ("output/\x1fx", "path refused: it contains a control character"),
    ("output/\x7fx", "path refused: it contains a control character"),
    ("output\\worker-0.log", "path refused: backslashes are not path separators here"),
    ("%2e%2e/run.json", "path refused: it is still percent-encoded after decoding"),
    ("/etc/passwd", "path refused: give a path relative to the run's folder"),
    ("//etc/passwd", "path refused: give a path relative to the run's folder"),
    ("output/../../x", "path refused: '..' would leave the run's folder"),
])
def test_each_refused_path_is_400_with_its_reason(path: str, why: str) -> None:
    assert refusal(files.checked, path) == (400, why)


# -- the run's folder --------------------------------------------------------------------------------

def test_a_run_with_no_folder_yet_is_404(tmp_path: Path) -> None:
    assert refusal(files.run_root, "") == (404, "this run has no folder yet (it has not started)")
    assert refusal(files.list_folder, "", "") == (404, "this run has no folder yet (it has not started)")
    assert files.run_root(str(tmp_path)) == str(tmp_path)


def test_a_run_folder_that_is_gone_or_a_file_is_404(tmp_path: Path) -> None:
    gone = tmp_path / "run-gone"
    assert refusal(files.open_local, str(gone), "") == (404, f"the run's folder {gone} is gone")
    a_file = tmp_path / "run-file"
    a_file.write_bytes(RUN_JSON)
    assert refusal(files.open_local, str(a_file), "") == (404, f"the run's folder {a_file} is gone")
    assert refusal(files.list_folder, str(a_file), "") == (404, f"the run's folder {a_file} is gone")


@pytest.mark.parametrize("name", ["results X", "results ", "results\t"], ids=["ends-in-X", "ends-in-space", "ends-in-tab"])
def test_a_run_folder_is_browsed_whatever_its_name_ends_in(tmp_path: Path, name: str) -> None:
    """The containment check adds a ``/`` to the run folder's real path after stripping only ``/``:
    a folder whose name ends in a space or an X is still the folder its files are in."""
    run = make_run(tmp_path / name)
    assert served(run, "output/worker-0.log") == LOG
    assert [e.name for e in files.list_folder(str(run), "output")] == ["data", "worker-0.log"]


def test_a_missing_path_or_a_path_through_a_file_is_404_naming_it(run: Path) -> None:
    assert refusal(files.open_local, str(run), "output/nope") == (404, "no file or folder 'output/nope' in this run")
    assert refusal(files.open_local, str(run), "run.json/x") == (404, "no file or folder 'run.json/x' in this run")
    assert refusal(files.open_local, str(run), "output/worker-0.log/x") == (
        404, "no file or folder 'output/worker-0.log/x' in this run")


# -- links -------------------------------------------------------------------------------------------

def test_link_targets_with_empty_and_dot_components_lead_where_the_kernel_would(run: Path) -> None:
    (run / "doubled").symlink_to("output//worker-0.log")
    (run / "trailing").symlink_to("output/")
    (run / "output" / "self").symlink_to("./worker-0.log")
    (run / "output" / "up").symlink_to("./../run.json")
    (run / "output" / "data" / "up2").symlink_to("../../run.json")
    for link, target in [("doubled", "output/worker-0.log"), ("output/self", "output/worker-0.log"),
                         ("output/up", "run.json"), ("output/data/up2", "run.json")]:
        assert served(run, link) == (run / target).read_bytes(), link
    assert [e.name for e in files.list_folder(str(run), "trailing")] == ["data", "self", "up", "worker-0.log"]


def test_a_link_deep_in_the_run_is_read_from_its_own_folder(run: Path) -> None:
    (run / "output" / "data" / "part-0").write_bytes(b"0123456789")
    (run / "output" / "data" / "latest").symlink_to("part-0")
    assert served(run, "output/data/latest") == b"0123456789"
    assert files.list_folder(str(run), "output/data") == [
        Entry("latest", "output/data/latest", False, 10), Entry("part-0", "output/data/part-0", False, 10)]


def test_a_link_target_with_spaces_names_one_file(run: Path) -> None:
    (run / "output" / "worker 0 copy.log").write_bytes(b"copy\n")
    (run / "copy").symlink_to("output/worker 0 copy.log")
    assert served(run, "copy") == b"copy\n"


def test_a_link_that_leaves_the_run_and_comes_back_in_is_refused(run: Path) -> None:
    """``..`` above the run's folder is refused where it is met, even when the rest of the target
    leads back in (the walk never stands above the run's folder)."""
    (run / "round-trip").symlink_to(f"../{run.name}/run.json")
    (run / "output" / "round-trip").symlink_to(f"../../{run.name}/output/worker-0.log")
    assert refusal(files.open_local, str(run), "round-trip") == (403, OUTSIDE)
    assert refusal(files.open_local, str(run), "output/round-trip") == (403, OUTSIDE)
    assert [e.name for e in files.list_folder(str(run), "")] == ["output", "run.json"]


def test_40_links_in_one_path_are_followed_and_41_are_a_loop(run: Path) -> None:
    """Linux's own limit: a chain of 40 links leads to its file, one more is refused as a loop."""
    (run / "link-0").symlink_to("run.json")
    for i in range(1, 41):
        (run / f"link-{i}").symlink_to(f"link-{i - 1}")
    assert served(run, "link-39") == RUN_JSON  # 40 links followed
    assert refusal(files.open_local, str(run), "link-40") == (400, "path refused: 'link-40' is a loop of symbolic links")


# -- a folder moved out while it is walked -----------------------------------------------------------

def test_a_folder_moved_out_of_the_run_while_it_is_walked_is_refused(
        run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job moves ``output`` out of the run's folder after the walk opened it and before it opens the
    file in it: the file opened is outside the run, and is refused. The move is made certain by doing
    it inside the walk's ``os.open`` of the file."""
    real_open = os.open

    def moved_first(path, flags, mode=0o777, *, dir_fd=None):
        if dir_fd is not None and path == "worker-0.log" and (run / "output").exists():
            os.rename(run / "output", tmp_path / "elsewhere")
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", moved_first)
    assert refusal(files.open_local, str(run), "output/worker-0.log") == (403, OUTSIDE)


def test_without_proc_the_walk_s_own_rules_stand(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``/proc`` is missing (macOS) the open descriptor's path cannot be read back: what the walk
    opened is served."""
    real_readlink = os.readlink

    def no_proc(path, *, dir_fd=None):
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(path)
        return real_readlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "readlink", no_proc)
    assert served(run, "output/worker-0.log") == LOG


# -- descriptors -------------------------------------------------------------------------------------

def test_a_detached_descriptor_is_the_caller_s_and_the_opened_holds_none(run: Path) -> None:
    opened = files.open_local(str(run), "run.json")
    fd = opened.detach()
    assert opened.fd == -1  # as after exit: no descriptor
    opened.__exit__()
    try:
        assert os.pread(fd, 100, 0) == RUN_JSON
    finally:
        os.close(fd)
