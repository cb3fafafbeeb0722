"""Input data of the image workloads (NumPy only, so that the PyTorch and TensorFlow workloads share it).

``synthetic``: one random batch per replica, reused every step (tf_cnn_benchmarks' synthetic mode:
it measures the model, not the input pipeline). Otherwise a dataset folder — absolute, or relative
to ``$KUBEBENCH_DATA_ROOT`` (the experiment's shared input data) — holding
``<split>_images.npy`` (uint8, N×H×W×C) and ``<split>_labels.npy`` (integers, N) for the splits
``train`` and optionally ``val``. The files are memory-mapped and each replica reads its own shard.

    python -m kubebench.workloads.data DIR [--samples 4096] [--image-size 32] [--classes 10]

writes a learnable synthetic dataset (class prototypes plus noise, a few labels flipped) to ``DIR``
(unless it already holds one).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SYNTHETIC = "synthetic"


def resolve(data: str) -> Path:
    """The dataset folder named by ``--data``: absolute, or under ``$KUBEBENCH_DATA_ROOT``."""
    path = Path(data)
    if path.is_absolute():
        return path
    root = os.environ.get("KUBEBENCH_DATA_ROOT")
    return Path(root) / path if root else path


@dataclass(frozen=True)
class Shard:
    """The part of one split that a replica reads: rank ``rank`` of ``world`` takes every world-th batch."""

    images: np.ndarray  # N×H×W×C uint8 (memory-mapped)
    labels: np.ndarray  # N
    batch_size: int
    rank: int = 0
    world: int = 1

    def __len__(self) -> int:
        return len(self.labels)

    def batch(self, step: int) -> tuple[np.ndarray, np.ndarray]:
        """Batch number ``step`` of this replica (wrapping around the split)."""
        start = (step * self.world + self.rank) * self.batch_size
        index = np.arange(start, start + self.batch_size) % len(self.labels)
        return np.asarray(self.images[index]), np.asarray(self.labels[index], dtype=np.int64)

    def steps_per_epoch(self) -> int:
        """Steps in which the replicas together see the split once (at least one)."""
        return max(1, len(self.labels) // (self.batch_size * self.world))


def open_split(folder: Path, split: str, batch_size: int, rank: int = 0, world: int = 1) -> Shard:
    """Memory-map ``<split>_images.npy`` / ``<split>_labels.npy`` of ``folder``."""
    images_path, labels_path = folder / f"{split}_images.npy", folder / f"{split}_labels.npy"
    missing = [p.name for p in (images_path, labels_path) if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"dataset {folder}: missing {', '.join(missing)} "
                                f"(make one with: python -m kubebench.workloads.data {folder})")
    images = np.load(images_path, mmap_mode="r")
    labels = np.load(labels_path, mmap_mode="r")
    if images.ndim != 4 or images.dtype != np.uint8 or len(images) != len(labels):
        raise ValueError(f"dataset {folder}: {split}_images.npy must be uint8 N×H×W×C with one label per image, "
                         f"got {images.dtype} {images.shape} and {len(labels)} labels")
    return Shard(images, labels, batch_size, rank, world)


def synthetic_batch(batch_size: int, image_size: int, channels: int, classes: int, seed: int):
    """A random float32 NHWC batch in [-1, 1) and its labels; ``seed`` differs per replica."""
    rng = np.random.default_rng(seed)
    images = rng.uniform(-1.0, 1.0, (batch_size, image_size, image_size, channels)).astype(np.float32)
    return images, rng.integers(0, classes, batch_size, dtype=np.int64)


def normalize(images: np.ndarray) -> np.ndarray:
    """uint8 pixels → float32 in [-1, 1], the scale both workloads train on."""
    return images.astype(np.float32) * (2.0 / 255.0) - 1.0


def make_dataset(folder: Path, samples: int, val_samples: int, image_size: int, channels: int, classes: int,
                 seed: int = 0, noise: float = 2.0, flip: float = 0.05) -> Path:
    """Write a learnable dataset: smooth class prototypes (pixels in [-1, 1]) plus Gaussian pixel
    noise of standard deviation ``noise`` (the default makes a small CNN need a few epochs to reach
    80% accuracy); ``flip`` of the labels are random, so accuracy stays below 1, as on real data.
    Written to a temporary folder and renamed, so concurrent replicas creating the same dataset
    never see half a one.
    """
    if (folder / "train_labels.npy").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(-1, 1, (classes, 4, 4, channels))
    prototypes = np.kron(coarse, np.ones((1, -(-image_size // 4), -(-image_size // 4), 1)))[:, :image_size, :image_size]
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for split, count in (("train", samples), ("val", val_samples)):
            labels = rng.integers(0, classes, count)
            pixels = prototypes[labels] + rng.normal(0, noise, (count, image_size, image_size, channels))
            flipped = rng.random(count) < flip
            labels[flipped] = rng.integers(0, classes, int(flipped.sum()))
            np.save(tmp / f"{split}_images.npy", ((np.clip(pixels, -1, 1) + 1) * 127.5).astype(np.uint8))
            np.save(tmp / f"{split}_labels.npy", labels.astype(np.int64))
        os.rename(tmp, folder)
    except OSError:
        if not (folder / "train_labels.npy").exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # no-op after a successful rename
    return folder


def main(argv: list[str] | None = None) -> None:
    """Command line of ``make_dataset``."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.data", description=(make_dataset.__doc__ or "").split(".")[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--val-samples", type=int, default=1024)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--channels", type=int, default=3)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--noise", type=float, default=2.0, help="pixel noise (standard deviation)")
    a = p.parse_args(argv)
    folder = make_dataset(resolve(str(a.folder)), a.samples, a.val_samples, a.image_size, a.channels, a.classes,
                          a.seed, a.noise)
    print(f"dataset: {folder}")


if __name__ == "__main__":
    main()
