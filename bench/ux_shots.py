"""Screenshots of what the 2026-12-02 UX review saw (not a benchmark): the serving part of an
experiment page (desktop and phone), a series' history page, and ``kubebench results`` at 80 columns,
from the experiments of ``tests/support/ux_home.py``, written as small PNGs under ``docs/shots/``.

    .venv/bin/python bench/ux_shots.py --tag after     # docs/shots/after-*.png
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "web"), str(ROOT / "tests")]

from support import ux_home  # noqa: E402
from web_support import WEB_TOKEN, serving  # noqa: E402

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def results_svg(store, width: int = 80) -> str:
    """``kubebench results`` of the inference sweep on a terminal of ``width`` columns, as SVG."""
    from rich.console import Console

    from kubebench.cli.results import print_results

    console = Console(width=width, record=True, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    print_results(console, store, ux_home.INFERENCE)
    return console.export_svg(title=f"kubebench results ({width} columns)")


def small_png(path: Path) -> None:
    """Fewer colours: the shots stay a few tens of KiB."""
    from PIL import Image

    image = Image.open(path).convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", required=True, help="before or after: the files' prefix")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "shots")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        config = make_settings(home=home, store=f"sqlite:///{home / 'kubebench.db'}", storage=str(home / "experiments"))
        store = open_store(config.store_url)
        ux_home.build(store)
        (home / "results.svg").write_text(results_svg(store), encoding="utf-8")
        shots = []
        with serving(make_app(store, config, token=WEB_TOKEN)) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_FLAGS)
            for size, viewport in (("desk", {"width": 1440, "height": 900}), ("phone", {"width": 390, "height": 844})):
                page = browser.new_page(viewport=viewport)
                page.goto(f"{url}/experiments/{ux_home.SERVING}")
                page.wait_for_selector("#serving-plots[data-rendered='1']", state="attached", timeout=90_000)
                path = args.out / f"{args.tag}-serving-{size}.png"
                page.locator("#serving-section").screenshot(path=str(path))
                shots.append(path)
                page.close()
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{url}/history/nightly")
            page.wait_for_selector("#history-chart[data-rendered='1']", state="attached", timeout=90_000)
            path = args.out / f"{args.tag}-history-desk.png"
            page.screenshot(path=str(path), full_page=True)
            shots.append(path)
            svg = (home / "results.svg").read_text(encoding="utf-8")
            width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
            page.set_viewport_size({"width": int(width), "height": int(height)})
            page.set_content(f"<body style='margin:0'>{svg}</body>")
            path = args.out / f"{args.tag}-results-80col.png"
            page.locator("svg").screenshot(path=str(path))
            shots.append(path)
            browser.close()
    for path in shots:
        small_png(path)
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
