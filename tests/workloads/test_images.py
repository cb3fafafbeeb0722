"""Image folders as the CNN workload's input: JPEGs of an ImageFolder layout decoded by a DataLoader's
workers, each replica its own shard, and the wait for each batch measured (``data_wait_fraction``).
(The workload trains on them end to end in tests/examples: the jpeg-loader example.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from kubebench.workloads import cnn
from kubebench.workloads.images import ImageFolder, image_root, open_loader


def jpegs(root: Path, classes: int = 3, per_class: int = 8, size: int = 20) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in range(classes):
        (root / f"c{c}").mkdir(parents=True)
        for i in range(per_class):
            pixels = np.full((size, size, 3), 40 + 80 * c, dtype=np.uint8) + rng.integers(0, 20, (size, size, 3),
                                                                                        dtype=np.uint8)
            Image.fromarray(pixels).save(root / f"c{c}" / f"{i}.jpg", quality=95)
    (root / "c0" / "notes.txt").write_text("not an image")
    return root


def test_the_layout_is_found_at_the_root_or_under_train(tmp_path: Path) -> None:
    assert image_root(jpegs(tmp_path / "a")) == tmp_path / "a"
    assert image_root(jpegs(tmp_path / "b" / "train")) == tmp_path / "b" / "train"
    (tmp_path / "empty" / "c0").mkdir(parents=True)
    assert image_root(tmp_path / "empty") is None and image_root(tmp_path / "missing") is None


def test_images_are_decoded_resized_and_labelled_by_class_folder(tmp_path: Path) -> None:
    data = ImageFolder(jpegs(tmp_path / "d"), size=16, channels=3)
    assert data.classes == ["c0", "c1", "c2"] and len(data) == 24  # notes.txt is no image
    image, label = data[len(data) - 1]
    assert image.shape == (3, 16, 16) and image.dtype == torch.uint8 and label == 2
    assert abs(float(image.float().mean()) - (40 + 160 + 10)) < 10  # the class's grey, resized
    gray, _ = ImageFolder(tmp_path / "d", size=20, channels=1)[0]
    assert gray.shape == (1, 20, 20)
    with pytest.raises(ValueError, match="--channels must be 1, 3 or 4"):
        ImageFolder(tmp_path / "d", size=16, channels=2)


def test_each_replica_reads_its_shard_epoch_after_epoch(tmp_path: Path) -> None:
    root = jpegs(tmp_path / "d")
    shards = [open_loader(root, 4, 16, 3, 10, 0, rank, 2, seed=1) for rank in (0, 1)]
    seen = [[int(v) for step in range(3) for v in shard(step)[1]] for shard in shards]  # 3 batches of 4 = an epoch each
    assert sorted(seen[0] + seen[1]) == sorted([0] * 8 + [1] * 8 + [2] * 8)
    more = shards[0](3)  # a fourth batch: the next epoch
    assert more[0].shape == (4, 3, 16, 16) and len(shards[0].waits) == 4 and all(w > 0 for w in shards[0].waits)


def test_a_folder_the_model_cannot_read_is_one_clear_error(tmp_path: Path) -> None:
    root = jpegs(tmp_path / "d")
    with pytest.raises(ValueError, match=r"3 classes, the model 2: pass --num-classes 3"):
        open_loader(root, 4, 16, 3, 2, 0, 0, 1, 0)
    with pytest.raises(ValueError, match=r"24 images, fewer than one batch of each replica \(16 × 2\)"):
        open_loader(root, 16, 16, 3, 10, 0, 0, 2, 0)
    with pytest.raises(ValueError, match="no image folder"):
        open_loader(tmp_path, 4, 16, 3, 10, 0, 0, 1, 0)


def test_the_data_wait_is_a_share_of_the_measured_steps() -> None:
    assert cnn.data_wait([0.1, 0.3, 0.2], [1.0, 1.0, 2.0]) == pytest.approx({"data_wait_fraction": 0.15,
                                                                              "data_wait_p50": 0.2}, rel=1e-12)
