"""What the web tests (and bench/web_list.py) share besides fixtures: the demo specs, a runner of
specs, and uvicorn serving an app in a background thread."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

WEB_TOKEN = "test-token-0123456789"

# A tiny workload: prints metric lines that depend on the parameters and the repeat (so plots and
# statistics have something to show), and writes a file into output/.
WORKLOAD = (
    "import os, time, kubebench; "
    "r = int(os.environ['KUBEBENCH_REPEAT']); "
    "out = os.environ['KUBEBENCH_EXP_OUTPUT_PATH']; "
    "f = open(os.path.join(out, 'samples.csv'), 'w'); print('step,loss', '0,1.0', '1,0.5', sep=chr(10), file=f); f.close(); "
    "print('training size', {{ size }}, flush=True); time.sleep(0.15); "
    "kubebench.report(throughput={{ size }} * {{ speed }} + r, latency=10.0 / {{ size }} + r * 0.1)"
)

SWEEP_SPEC = """\
name: web-demo
job:
  command: [python, -c, "__WORKLOAD__"]
parameters:
  size: [1, 2]
  speed: __SPEED__
repeats: 4
parallelism: 3
telemetry: {interval: 0.05, gpu: false}
metrics:
  - {name: throughput, unit: items/s, primary: true}
  - {name: latency, unit: ms, goal: minimize}
""".replace("__WORKLOAD__", WORKLOAD)


def sweep_spec(speed: int) -> str:
    """The demo sweep with its ``speed`` parameter set (the candidate is faster)."""
    return SWEEP_SPEC.replace("__SPEED__", str(speed))


FAILING_SPEC = """\
name: web-broken
job:
  command: [python, -c, "import sys, kubebench; print('about to fail'); kubebench.report(v=1); sys.exit({{ code }})"]
parameters:
  code: [0, 3]
metrics: [{name: v}]
"""


@dataclass(frozen=True)
class WebHome:
    """The home the web tests share: where it is, its settings, and the experiments in it."""

    home: Path
    settings: object  # kubebench.settings.Settings
    baseline: str  # web-demo with speed 100 (2 trials × 4 repeats, all succeeded)
    candidate: str  # the same sweep with speed 110
    failed: str  # web-broken: one succeeded and one failed run

    @property
    def sweeps(self) -> tuple[str, str]:
        return (self.baseline, self.candidate)

    def store(self):
        """A new Store over the home's database."""
        from kubebench.store.store import open_store

        return open_store(self.settings.store_url)


def tiny_run(root: Path, experiment_id: str):
    """A kubebench home under ``root`` where :data:`TINY` ran as ``experiment_id``: (settings, store)."""
    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store

    config = make_settings(home=root / "home", store=f"sqlite:///{root / 'home' / 'kb.db'}")
    run_spec(TINY, root, config, experiment_id)
    return config, open_store(config.store_url)


def run_spec(text: str, folder: Path, settings, experiment_id: str) -> None:
    """Run a spec for real through the runner's Python API (local backend)."""
    from kubebench.runner import execute, plan_experiment
    from kubebench.spec.load import load_spec
    from kubebench.store.store import open_store

    path = folder / f"{experiment_id}.yaml"
    path.write_text(text, encoding="utf-8")
    experiment = plan_experiment(load_spec(path), settings, experiment_id)
    execute(experiment, open_store(settings.store_url))


@dataclass(frozen=True)
class LiveServer:
    url: str
    token: str
    app: object


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class serving:
    """uvicorn serving ``app`` on 127.0.0.1 in a background thread (a context manager)."""

    def __init__(self, app, port: int | None = None) -> None:
        import uvicorn

        self.port = port or free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn-test", daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)

#: A two-run spec whose jobs only report a metric (the web and security tests launch it).
TINY = """\
name: tiny
job:
  command: [python, -c, "import kubebench; kubebench.report(v={{ n }})"]
parameters:
  n: [1, 2]
telemetry: {enabled: false}
metrics: [{name: v}]
"""
