"""Image files as a real input pipeline: an ImageFolder layout (``<root>/<class>/<image>.jpg``, or the
same under ``<root>/train/``) read by a PyTorch DataLoader whose workers decode the JPEGs (Pillow).

What it measures beside the model: how long each step waited for its batch (``data_wait``), so that
a benchmark shows when the storage or the decoding, not the model, bounds the rate. With
``loader_workers`` 0 the main process decodes every batch itself (it all counts as waiting); with
more, the workers decode ahead while the model trains.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

#: File name endings read as images (what Pillow decodes; torchvision's ImageFolder reads the same).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
#: Batches each loader worker decodes ahead.
PREFETCH = 2


def image_root(folder: Path) -> Path | None:
    """The folder whose sub-folders are the classes (``folder`` or ``folder/train``), or None when
    ``folder`` holds no ImageFolder layout."""
    for root in (folder / "train", folder):
        if root.is_dir() and any(_images(c) for c in root.iterdir() if c.is_dir()):
            return root
    return None


def _images(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


class ImageFolder(Dataset):
    """The images of ``root``'s class folders (classes in name order), decoded to uint8 C×H×W of
    ``size``×``size`` pixels (resized when they differ)."""

    def __init__(self, root: Path, size: int, channels: int) -> None:
        self.classes = sorted(c.name for c in root.iterdir() if c.is_dir() and _images(c))
        self.samples = [(path, index) for index, name in enumerate(self.classes) for path in _images(root / name)]
        self.size, self.mode = size, {1: "L", 3: "RGB", 4: "RGBA"}.get(channels)
        if self.mode is None:
            raise ValueError(f"image folder {root}: --channels must be 1, 3 or 4 for image files, got {channels}")

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        path, label = self.samples[index]
        with Image.open(path) as image:  # decoded whole, as torchvision's ImageFolder and Resize do
            pixels = image.convert(self.mode)
            if pixels.size != (self.size, self.size):
                pixels = pixels.resize((self.size, self.size), Image.Resampling.BILINEAR)
            array = np.asarray(pixels, dtype=np.uint8).reshape(self.size, self.size, -1)
        return torch.from_numpy(array.copy()).permute(2, 0, 1), label


def _one_thread(_worker: int) -> None:
    torch.set_num_threads(1)  # a worker decodes; it must not take the CPUs the model's threads use


@dataclass
class LoaderBatches:
    """``batch(step)`` from a DataLoader over the replica's shard (epoch after epoch), timing each wait."""

    loader: DataLoader
    #: Seconds each call waited for its batch, in step order.
    waits: list[float] = field(default_factory=list)
    _epoch: int = 0
    _iterator: object = None

    def __call__(self, _step: int) -> tuple[torch.Tensor, torch.Tensor]:
        start = time.perf_counter()
        batch = self._next()
        self.waits.append(time.perf_counter() - start)
        return batch

    def _next(self) -> tuple[torch.Tensor, torch.Tensor]:
        while True:
            if self._iterator is None:
                sampler = self.loader.sampler
                if isinstance(sampler, DistributedSampler):
                    sampler.set_epoch(self._epoch)
                self._iterator = iter(self.loader)
            try:
                return next(self._iterator)  # type: ignore[call-overload]
            except StopIteration:
                self._iterator, self._epoch = None, self._epoch + 1


def open_loader(folder: Path, batch_size: int, size: int, channels: int, classes: int, workers: int,
                rank: int, world: int, seed: int) -> LoaderBatches:
    """A DataLoader over the image folder, shard ``rank`` of ``world``, shuffled per epoch, whole batches
    only; ValueError for a folder without images, or with more classes than the model has."""
    root = image_root(folder)
    if root is None:
        raise ValueError(f"dataset {folder}: no image folder (expected <class>/<image>.jpg under it, or under "
                         "train/)")
    dataset = ImageFolder(root, size, channels)
    if len(dataset.classes) > classes:
        raise ValueError(f"dataset {root}: {len(dataset.classes)} classes, the model {classes}: "
                         f"pass --num-classes {len(dataset.classes)}")
    if len(dataset) < batch_size * world:
        raise ValueError(f"dataset {root}: {len(dataset)} images, fewer than one batch of each replica "
                         f"({batch_size} × {world})")
    sampler: DistributedSampler[int] = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=workers, drop_last=True,
                        persistent_workers=workers > 0, prefetch_factor=PREFETCH if workers else None,
                        worker_init_fn=_one_thread if workers else None)
    return LoaderBatches(loader)
