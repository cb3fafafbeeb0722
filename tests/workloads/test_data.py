"""Workload input data: the on-disk dataset format, its shards, and where a relative path points."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kubebench.workloads import data


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    return data.make_dataset(tmp_path / "ds", samples=64, val_samples=16, image_size=8, channels=3, classes=4)


def test_made_dataset_has_the_documented_format(dataset: Path) -> None:
    images, labels = np.load(dataset / "train_images.npy"), np.load(dataset / "train_labels.npy")
    assert images.shape == (64, 8, 8, 3) and images.dtype == np.uint8
    assert labels.shape == (64,) and set(labels) <= {0, 1, 2, 3}
    assert np.load(dataset / "val_images.npy").shape == (16, 8, 8, 3)
    assert not [p for p in dataset.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_making_it_again_keeps_the_existing_files(dataset: Path) -> None:
    before = (dataset / "train_images.npy").stat().st_mtime_ns
    data.make_dataset(dataset, samples=8, val_samples=8, image_size=4, channels=1, classes=2)
    assert (dataset / "train_images.npy").stat().st_mtime_ns == before
    assert np.load(dataset / "train_images.npy").shape == (64, 8, 8, 3)


def test_same_seed_same_dataset(tmp_path: Path) -> None:
    a = data.make_dataset(tmp_path / "a", 32, 8, 8, 3, 4, seed=3)
    b = data.make_dataset(tmp_path / "b", 32, 8, 8, 3, 4, seed=3)
    assert np.array_equal(np.load(a / "train_images.npy"), np.load(b / "train_images.npy"))


def test_replicas_read_disjoint_batches_that_cover_an_epoch(dataset: Path) -> None:
    shards = [data.open_split(dataset, "train", batch_size=8, rank=r, world=2) for r in range(2)]
    assert shards[0].steps_per_epoch() == 4
    seen = []
    for step in range(4):
        for shard in shards:
            images, labels = shard.batch(step)
            assert images.shape == (8, 8, 8, 3) and labels.dtype == np.int64
            seen.append(images)
    all_images = np.concatenate(seen)
    assert np.array_equal(np.sort(all_images.reshape(64, -1), axis=0),
                          np.sort(np.load(dataset / "train_images.npy").reshape(64, -1), axis=0))


def test_missing_dataset_names_the_files_and_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing train_images.npy, train_labels.npy .*kubebench.workloads.data"):
        data.open_split(tmp_path, "train", 4)


def test_relative_paths_are_under_the_data_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KUBEBENCH_DATA_ROOT", str(tmp_path))
    assert data.resolve("imagenet") == tmp_path / "imagenet"
    assert data.resolve("/abs/set") == Path("/abs/set")


def test_normalize_maps_pixels_to_minus_one_one() -> None:
    assert data.normalize(np.array([0, 255], dtype=np.uint8)).tolist() == [-1.0, 1.0]
