"""Write a small ImageFolder dataset of JPEGs into $KUBEBENCH_DATA_PATH: <class>/<index>.jpg.

    python make_jpegs.py --images 2000 --classes 10 --size 64

Each class is a colour gradient with noise on top, so a CNN can learn it; the same arguments give
the same files, byte for byte (a fixed seed), so the dataset's checksum is stable.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from PIL import Image


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=2000, help="images in all")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--size", type=int, default=64, help="height and width in pixels")
    p.add_argument("--quality", type=int, default=90, help="JPEG quality")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    root = Path(os.environ["KUBEBENCH_DATA_PATH"])
    rng = np.random.default_rng(a.seed)
    ramp = np.linspace(0, 1, a.size)[None, :, None]
    colours = rng.uniform(0, 255, (a.classes, 2, 3))
    for index in range(a.images):
        label = index % a.classes
        low, high = colours[label]
        pixels = low + (high - low) * ramp + rng.normal(0, 40, (a.size, a.size, 3))
        folder = root / f"class-{label:03d}"
        folder.mkdir(exist_ok=True)
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(folder / f"{index:06d}.jpg", quality=a.quality)
    print(f"wrote {a.images} JPEGs of {a.size}x{a.size} in {a.classes} classes to {root}")


if __name__ == "__main__":
    main()
