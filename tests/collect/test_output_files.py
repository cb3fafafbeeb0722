"""What the runner finds where a workload's output should be: each kind of non-file is named in the
error, a link is refused, a file past its limit fails, one at the limit is read whole."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from kubebench.errors import PostprocessError
from kubebench.limits import STEP_FILE_BYTES
from kubebench.output_files import open_output, open_output_text, read_output


def test_each_kind_of_non_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "folder.log").mkdir()
    os.mkfifo(tmp_path / "fifo.log")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "socket.log"))
        expected = {tmp_path / "folder.log": "a folder", tmp_path / "fifo.log": "a FIFO",
                    tmp_path / "socket.log": "a socket", Path("/dev/null"): "a device file"}
        for path, kind in expected.items():
            with pytest.raises(PostprocessError) as e:
                open_output(path)
            assert str(e.value) == f"{path.parent.name}/{path.name} is {kind}, not a regular file"
    finally:
        server.close()


def test_a_link_is_refused_and_a_missing_file_is_an_os_error(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    with pytest.raises(PostprocessError, match=r"^\S+/link.json is a symbolic link, not a regular file$"):
        open_output(tmp_path / "link.json")
    with pytest.raises(FileNotFoundError):
        open_output(tmp_path / "missing.json")


def test_text_is_utf8_with_bad_bytes_replaced(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_bytes("é\xff".encode() + b"\xff\n")
    with open_output_text(tmp_path / "a.log") as f:
        assert f.read() == "é\u00ff\ufffd\n"


def test_a_file_at_the_limit_is_read_whole_and_one_byte_more_fails(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STEP_FILE_BYTES.env, "10")
    (tmp_path / "ten.json").write_bytes(b"0123456789")
    assert read_output(tmp_path / "ten.json", STEP_FILE_BYTES) == b"0123456789"
    (tmp_path / "eleven.json").write_bytes(b"0123456789a")
    with pytest.raises(PostprocessError) as e:
        read_output(tmp_path / "eleven.json", STEP_FILE_BYTES)
    assert str(e.value) == (f"{tmp_path.name}/eleven.json is larger than 10 bytes "
                            f"(the limit; {STEP_FILE_BYTES.env} changes it)")


def test_a_huge_file_is_refused_without_being_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the limit and one byte more are read: a 4 GiB (sparse) file is refused under an address-space
    limit 1 GiB above what this process uses (reading it whole would be a MemoryError)."""
    import resource

    monkeypatch.setenv(STEP_FILE_BYTES.env, "100")
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(4 << 30)
    used = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                    if line.startswith("VmSize:")).split()[1]) * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 30), hard))
    try:
        with pytest.raises(PostprocessError, match="is larger than 100 bytes"):
            read_output(huge, STEP_FILE_BYTES)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
