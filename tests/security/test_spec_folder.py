"""Review 2026-12-02, N2 and N20: the spec's folder shipped to a cluster (`kubebench deploy manifests
--spec`, the Kubernetes backend's spec ConfigMap) never follows a link out of the folder, and is
counted (names, sizes, number of files) before any file is read whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from limits_support import in_child
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.errors import SpecError
from kubebench.spec.files import SPEC_FILES_MAX_BYTES, SPEC_FILES_MAX_COUNT, shipped_size, spec_files_of

SECRET = "aws_secret_access_key = AKIAFAKE/SECRET"
SPEC = "name: basic\njob: {kind: Job, command: [python, run.py]}\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A spec folder (``bench/``) and, outside it, a credentials file (``fake_credentials``)."""
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "benchmark.yaml").write_text(SPEC)
    (bench / "run.py").write_text("print('ok')\n")
    (tmp_path / "fake_credentials").write_text(SECRET + "\n")
    return bench


def deploy(spec: Path):
    return CliRunner().invoke(app, ["deploy", "manifests", "--spec", str(spec), "--image", "kb:1"])


@pytest.mark.parametrize("target", ["../fake_credentials", "/etc/passwd", "../nothing-there"])
def test_a_link_out_of_the_folder_is_refused_naming_it(folder: Path, target: str) -> None:
    (folder / "creds").symlink_to(target)
    with pytest.raises(SpecError, match=r"bench/creds: a symbolic link to .*, outside the spec's folder"):
        spec_files_of(folder / "benchmark.yaml")
    result = deploy(folder / "benchmark.yaml")
    assert result.exit_code == 2, result.output
    assert "creds: a symbolic link to" in result.output and "Traceback" not in result.output
    assert SECRET not in result.output and "root:" not in result.output and "apiVersion" not in result.output


def test_the_spec_itself_as_a_link_out_is_refused(folder: Path) -> None:
    (folder / "benchmark.yaml").unlink()
    (folder / "benchmark.yaml").symlink_to(folder.parent / "fake_credentials")
    result = deploy(folder / "benchmark.yaml")
    assert result.exit_code == 2 and "benchmark.yaml: a symbolic link to" in result.output, result.output
    assert SECRET not in result.output


def test_links_that_stay_inside_ship_their_file_and_folders_are_left_out(folder: Path, tmp_path: Path) -> None:
    (folder / "params-small.yaml").write_text("n: [1]\n")
    (folder / "params.yaml").symlink_to("params-small.yaml")  # inside: shipped under the link's name
    (folder / ".env").write_text(SECRET)
    (folder / "config").symlink_to(".env")  # inside, but a hidden file: left out as hidden files are
    (tmp_path / "datasets").mkdir()
    (folder / "data").symlink_to(tmp_path / "datasets")  # a folder: not shipped, not refused
    (folder / "sub").mkdir()
    os.mkfifo(folder / "pipe")  # never opened: it would block a read
    files = spec_files_of(folder / "benchmark.yaml")
    assert files == {"benchmark.yaml": SPEC, "params-small.yaml": "n: [1]\n", "params.yaml": "n: [1]\n",
                     "run.py": "print('ok')\n"}
    assert list(files)[0] == "benchmark.yaml"


def test_binary_files_are_left_out_unread(folder: Path) -> None:
    with open(folder / "model.pt", "wb") as f:  # 2 GB, sparse: a NUL in its first bytes
        f.truncate(2_000_000_000)
    answer = in_child(spec_files_of, folder / "benchmark.yaml", memory_bytes=200_000_000)
    assert answer[0] == "ok" and set(answer[1]) == {"benchmark.yaml", "run.py"}, answer


def test_a_big_text_file_is_refused_before_it_is_read(folder: Path) -> None:
    with open(folder / "big.log", "wb") as f:  # 600 MB of text as stat counts it (sparse past 8 KiB)
        f.write(b"a" * 8192)
        f.truncate(600_000_000)
    answer = in_child(spec_files_of, folder / "benchmark.yaml", memory_bytes=200_000_000)
    assert answer[0] == "error" and answer[1] == "SpecError", answer
    assert "the spec's folder holds 600,001,1" in answer[2] and "big.log (600,000,000 bytes)" in answer[2]
    assert "more than a ConfigMap takes (900,000" in answer[2]


def test_many_small_files_are_refused_by_their_count(folder: Path) -> None:
    for i in range(SPEC_FILES_MAX_COUNT):
        (folder / f"f{i:06d}.txt").write_text("x" * 5)
    result = deploy(folder / "benchmark.yaml")
    assert result.exit_code == 2, result.output[-500:]
    assert f"holds more than {SPEC_FILES_MAX_COUNT:,} files to ship" in result.output


def test_names_count_with_the_values_as_the_api_server_stores_them(folder: Path) -> None:
    (folder / "run.py").unlink()
    (folder / "data.csv").write_text("1" * 880_000)
    for i in range(100):
        (folder / f"{i:03d}{'n' * 246}.txt").write_text("x")  # 253-character names: 25 kB of keys
    values = 880_000 + 100 + len(SPEC)
    assert values < SPEC_FILES_MAX_BYTES  # what the old check counted
    with pytest.raises(SpecError, match="names counted"):
        spec_files_of(folder / "benchmark.yaml")
    for path in folder.glob("*nnnn*.txt"):
        path.unlink()
    files = spec_files_of(folder / "benchmark.yaml")
    map_size = len(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": files,
                               "metadata": {"name": "kb-spec-" + "x" * 55, "labels": {"kubebench.io/experiment": "x" * 63}}}))
    assert shipped_size(files) <= SPEC_FILES_MAX_BYTES and map_size <= shipped_size(files) < 1_048_576


def test_deploy_names_the_files_it_ships(folder: Path) -> None:
    result = deploy(folder / "benchmark.yaml")
    assert result.exit_code == 0, result.output
    assert f"# the spec's folder {folder}: 2 files, " in result.output and ": benchmark.yaml, run.py\n" in result.output
    (config_map,) = [d for d in yaml.safe_load_all(result.output) if d and d["kind"] == "ConfigMap"]
    assert config_map["data"] == {"benchmark.yaml": SPEC, "run.py": "print('ok')\n"}


def test_the_kubernetes_backend_refuses_the_link_before_it_starts(folder: Path) -> None:
    from kubebench.runner import make_backend
    from kubebench.spec.load import load_spec

    (folder / "benchmark.yaml").write_text(SPEC + "backend: {kind: kubernetes}\n")
    (folder / "creds").symlink_to(folder.parent / "fake_credentials")
    with pytest.raises(SpecError, match="creds: a symbolic link to"):
        make_backend(load_spec(folder / "benchmark.yaml"))  # it gives the backend the spec (give_spec)
