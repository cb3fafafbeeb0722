"""Fetching a dataset's file: over HTTP (a local server with ranges and faults), from S3 (moto's
server) and from a local path; verified, resumed, unpacked — and every fault one DataError naming
the dataset, with nothing unpacked from a file that is not the one expected."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from data_support import sha256, tar_of, zip_of

from kubebench.data import fetch as fetch_module
from kubebench.data.fetch import expected_sha256, fetch_into, file_name
from kubebench.data.plan import Fetch
from kubebench.data.progress import LogMeter
from kubebench.errors import DataError

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


def fetch(url: str, digest: str | None = None, checksums: str | None = None, **more) -> Fetch:
    options = {"into": "", "unpack": True, "timeout": 5.0, "retries": 1} | more
    return Fetch(name="digits", url=url, sha256=digest, checksums=checksums, **options)


def get(item: Fetch, tmp_path: Path, expected: str | None = None) -> tuple[Path, Path]:
    folder, partial = tmp_path / "data" / "digits", tmp_path / "data" / ".kubebench" / "partial" / "k1"
    folder.mkdir(parents=True, exist_ok=True)
    fetch_into(item, tmp_path, folder, partial, expected or item.sha256 or "", LogMeter())
    return folder, partial


def test_an_archive_over_http_is_verified_and_unpacked(files, tmp_path: Path) -> None:
    archive = tar_of({"train/0.txt": b"zero", "train/1.txt": b"one", "labels.csv": b"0,1\n"})
    files.files["/digits.tar.gz"] = archive
    folder, partial = get(fetch(files.url("/digits.tar.gz"), sha256(archive)), tmp_path)
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "labels.csv", "train/0.txt", "train/1.txt"]
    assert (folder / "train" / "1.txt").read_bytes() == b"one"
    assert not partial.exists()  # the download is not kept once unpacked


def test_a_plain_file_lands_under_its_name_in_into(files, tmp_path: Path) -> None:
    files.files["/weights.bin"] = PAYLOAD
    folder, _ = get(fetch(files.url("/weights.bin?version=2"), sha256(PAYLOAD), into="models/v2"), tmp_path)
    assert (folder / "models" / "v2" / "weights.bin").read_bytes() == PAYLOAD


def test_a_cut_download_resumes_with_a_range_request(files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch_module, "CHUNK", 65536)
    files.files["/big.bin"] = PAYLOAD
    files.cut["/big.bin"] = 300_000  # the connection drops once 300 kB of it went out
    folder, _ = get(fetch(files.url("/big.bin"), sha256(PAYLOAD), retries=2), tmp_path)
    assert (folder / "big.bin").read_bytes() == PAYLOAD
    starts = [int(r.removeprefix("bytes=").split("-")[0]) for p, r in files.requests if p == "/big.bin"]
    # four whole chunks, the fifth cut (300 kB = 4 × 64 KiB + 37,856 B), then on from the fifth
    assert starts == [i * 65536 for i in range(5)] + [i * 65536 for i in range(4, 16)]


def test_a_partial_download_left_by_an_earlier_try_is_resumed(files, tmp_path: Path) -> None:
    files.files["/big.bin"] = PAYLOAD
    partial = tmp_path / "data" / ".kubebench" / "partial" / "k1"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(PAYLOAD[:123_456])
    folder, _ = get(fetch(files.url("/big.bin"), sha256(PAYLOAD)), tmp_path)
    assert (folder / "big.bin").read_bytes() == PAYLOAD
    assert [r for p, r in files.requests if p == "/big.bin"] == [f"bytes=123456-{len(PAYLOAD) - 1}"]


def test_a_server_without_ranges_is_read_again_from_the_start(files, tmp_path: Path) -> None:
    files.files["/big.bin"] = PAYLOAD
    files.ranges = False
    partial = tmp_path / "data" / ".kubebench" / "partial" / "k1"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"x" * 1000)  # what an earlier try got (not even the right bytes)
    folder, _ = get(fetch(files.url("/big.bin"), sha256(PAYLOAD)), tmp_path)
    assert (folder / "big.bin").read_bytes() == PAYLOAD


def test_a_checksum_mismatch_names_both_and_deletes_the_file(files, tmp_path: Path) -> None:
    files.files["/digits.tar.gz"] = tar_of({"a": b"1"})
    wrong = "0" * 64
    with pytest.raises(DataError) as error:
        get(fetch(files.url("/digits.tar.gz"), wrong), tmp_path)
    text = str(error.value)
    assert text.startswith("dataset digits: checksum mismatch") and wrong in text
    assert sha256(files.files["/digits.tar.gz"]) in text
    folder = tmp_path / "data" / "digits"
    assert list(folder.iterdir()) == []  # nothing unpacked
    assert not (tmp_path / "data" / ".kubebench" / "partial" / "k1").exists()


def test_a_url_that_answers_404_fails_at_once(files, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^dataset digits: cannot fetch http://.*/gone\.tar: not found"):
        get(fetch(files.url("/gone.tar"), "a" * 64, retries=5), tmp_path)
    assert files.requests == [("/gone.tar", None)]  # fsspec's one GET after its HEAD: no retry


def test_a_stalled_server_times_out_after_the_retries(files, tmp_path: Path) -> None:
    files.files["/slow.bin"] = PAYLOAD
    files.stall.add("/slow.bin")
    files.stall_s = 3.0
    with pytest.raises(DataError) as error:
        get(fetch(files.url("/slow.bin"), sha256(PAYLOAD), timeout=0.5, retries=1), tmp_path)
    assert "dataset digits: cannot fetch" in str(error.value) and "timed out" in str(error.value)
    assert "after 2 attempts" in str(error.value)
    assert len([p for p, _ in files.requests if p == "/slow.bin"]) == 2


def test_a_full_disk_mid_download_keeps_what_arrived(files, tmp_path: Path) -> None:
    files.files["/big.bin"] = PAYLOAD
    partial = tmp_path / "data" / ".kubebench" / "partial" / "k1"
    partial.parent.mkdir(parents=True)
    partial.symlink_to("/dev/full")  # every write: ENOSPC, from the kernel
    with pytest.raises(DataError, match=r"^dataset digits: cannot fetch .*No space left on device"):
        get(fetch(files.url("/big.bin"), sha256(PAYLOAD), retries=3), tmp_path)
    assert len(files.requests) == 1  # a full disk is not retried
    assert not (tmp_path / "data" / "digits" / "big.bin").exists()


def test_the_checksum_comes_from_a_checksums_file(files, tmp_path: Path) -> None:
    archive = zip_of({"a/b.txt": b"bee"})
    files.files["/v1/digits.zip"] = archive
    files.files["/v1/SHA256SUMS"] = (f"{'1' * 64}  other.zip\n{sha256(archive)} *digits.zip\n").encode()
    item = fetch(files.url("/v1/digits.zip"), checksums=files.url("/v1/SHA256SUMS"))
    assert expected_sha256(item, tmp_path) == sha256(archive)
    folder, _ = get(item, tmp_path, sha256(archive))
    assert (folder / "a" / "b.txt").read_bytes() == b"bee"


def test_bsd_checksum_lines_and_a_missing_line(files, tmp_path: Path) -> None:
    files.files["/SUMS"] = f"SHA256 (digits.tar) = {'ab' * 32}\n".encode()
    assert expected_sha256(fetch("https://x/digits.tar", checksums=files.url("/SUMS")), tmp_path) == "ab" * 32
    with pytest.raises(DataError, match=r"^dataset digits: its checksums file .* has no SHA-256 line for 'x\.tar'"):
        expected_sha256(fetch("https://x/x.tar", checksums=files.url("/SUMS")), tmp_path)
    with pytest.raises(DataError, match=r"^dataset digits: cannot read its checksums file .*not found"):
        expected_sha256(fetch("https://x/x.tar", checksums=files.url("/NOPE")), tmp_path)


def test_a_local_path_relative_to_the_spec_and_file_urls(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.tar").write_bytes(tar_of({"x": b"1"}, mode="w"))
    digest = sha256((tmp_path / "in" / "d.tar").read_bytes())
    folder, _ = get(fetch("in/d.tar", digest), tmp_path)
    assert (folder / "x").read_bytes() == b"1"
    other = tmp_path / "second"
    other.mkdir()
    fetch_into(fetch(f"file://{tmp_path}/in/d.tar", digest, unpack=False), tmp_path, other,
               tmp_path / "p2", digest, LogMeter())
    assert (other / "d.tar").read_bytes() == (tmp_path / "in" / "d.tar").read_bytes()


def test_archives_that_write_outside_the_folder_are_refused(files, tmp_path: Path) -> None:
    evil = zip_of({"../escaped.txt": b"x"})
    files.files["/evil.zip"] = evil
    with pytest.raises(DataError, match=r"^dataset digits: cannot unpack evil\.zip: .*outside"):
        get(fetch(files.url("/evil.zip"), sha256(evil)), tmp_path)
    assert not (tmp_path / "data" / "escaped.txt").exists()
    bad = tar_of({"../escaped.txt": b"x"})
    files.files["/evil.tar.gz"] = bad
    with pytest.raises(DataError, match=r"^dataset digits: cannot unpack evil\.tar\.gz"):
        get(fetch(files.url("/evil.tar.gz"), sha256(bad)), tmp_path)
    assert not (tmp_path / "data" / "escaped.txt").exists()


def test_a_file_that_is_no_archive_of_its_name(files, tmp_path: Path) -> None:
    files.files["/not.zip"] = b"plain text"
    with pytest.raises(DataError, match=r"^dataset digits: cannot unpack not\.zip"):
        get(fetch(files.url("/not.zip"), sha256(b"plain text")), tmp_path)


def test_from_s3(s3: str, tmp_path: Path) -> None:
    import fsspec

    archive = tar_of({"s3/one.txt": b"1"})
    with fsspec.open(f"{s3}/sets/digits.tar.gz", "wb") as f:
        f.write(archive)
    folder, _ = get(fetch(f"{s3}/sets/digits.tar.gz", sha256(archive)), tmp_path)
    assert (folder / "s3" / "one.txt").read_bytes() == b"1"
    with pytest.raises(DataError, match=r"^dataset digits: cannot fetch s3://.*/sets/gone\.tar: not found"):
        get(fetch(f"{s3}/sets/gone.tar", "a" * 64), tmp_path)


def test_a_protocol_without_its_package(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^dataset digits: cannot fetch nosuch://b/x: not a URL fsspec knows"):
        get(fetch("nosuch://b/x", "a" * 64), tmp_path)


def test_file_names_of_urls() -> None:
    assert file_name("https://host/a/b.tar.gz?sig=1") == "b.tar.gz"
    assert file_name("s3://bucket/x/y.zip") == "y.zip"
    assert file_name("https://host/") == "data"
    assert os.path.basename(file_name("local/dir/f.bin")) == "f.bin"
