"""Gradient-boosted trees throughput: XGBoost on a synthetic tabular dataset, distributed through
XGBoost's collective (its tracker on rank 0, the workers' allreduce of histograms).

Run as ``python -m kubebench.workloads.xgb_train [--rows N] [--rounds N] [--tree-method hist|approx] …``.
With several workers (an XGBoostJob, a TrainJob on Trainer's ``xgboost-distributed`` runtime, or the
local backend emulating either; see :mod:`.peers`) rank 0 starts a ``RabitTracker`` where the
environment says it is and every worker joins it (ranks from the task id, ``sortby="task"``): each
trains on its own shard of rows, and they grow the same trees.

The data: ``--rows`` training and ``--valid-rows`` validation rows per worker, drawn (seed + rank) from
one fixed ground truth, a binary label from a logistic model of the informative features with
pairwise interactions, so that a model that learns more of it scores better: the quality shows
whether a faster configuration still learns (``valid_auc``, ``valid_logloss``, ``valid_error``:
XGBoost's own metrics over every worker's validation shard).

Rank 0 prints ``rows/sec: <global rate>`` and a ``KUBEBENCH_METRIC`` line: ``rows_per_sec`` (training
rows × measured rounds / seconds, summed over the workers), ``rows_per_sec_per_worker``,
``rounds_per_sec``, ``step_time_p50/p90/p99`` (per boosting round), ``boosting_seconds``, the
validation metrics, ``rows`` and ``rounds``; every round's time goes to ``output/step_times.json``
(items: rows), the configuration to ``output/xgb_train.json``, the model's info to
``result/result.json``. Every rank ends with ``rank R of N: params_sha256=<model digest> own_rate=…``.
Each marks ``imports_done``, ``rendezvous_done`` (after a first allreduce), ``first_step`` and
``last_step`` (around the boosting rounds): the run's phases, as for the PyTorch workloads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

import kubebench

from .measure import print_header, report_replica, step_metrics, write_step_times
from .options import available_cpus, non_negative, positive, positive_float
from .peers import Peers, PeersError, xgboost_peers

TREE_METHODS = ("hist", "approx")
#: Seconds the tracker waits for every worker to join (then the run fails instead of hanging).
INIT_TIMEOUT_S = 600
#: Offset of the validation rows' seed (apart from every worker's training seed).
VALID_SEED = 1_000_003


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line; argparse exits with status 2 and one line on error."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.xgb_train",
                                description="Gradient-boosted trees throughput in XGBoost (rows/s, rounds/s, quality).")
    p.add_argument("--rows", type=positive, default=50_000, help="training rows per worker")
    p.add_argument("--valid-rows", type=positive, default=10_000, help="validation rows per worker")
    p.add_argument("--features", type=positive, default=32, help="columns (at least --informative)")
    p.add_argument("--informative", type=positive, default=8, help="columns the label depends on")
    p.add_argument("--rounds", type=positive, default=50, help="measured boosting rounds")
    p.add_argument("--warmup-rounds", type=non_negative, default=2, help="rounds trained before measuring")
    p.add_argument("--max-depth", type=positive, default=6)
    p.add_argument("--learning-rate", type=positive_float, default=0.1)
    p.add_argument("--max-bin", type=positive, default=256, help="histogram bins per feature")
    p.add_argument("--tree-method", choices=TREE_METHODS, default="hist")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=non_negative, default=0, help="CPU threads (0: the CPUs / local workers)")
    args = p.parse_args(argv)
    if args.informative > args.features:
        p.error(f"--informative ({args.informative}) must not exceed --features ({args.features})")
    if args.max_bin < 2:
        p.error("--max-bin must be at least 2")
    return args


def synthetic(rows: int, features: int, informative: int, seed: int, truth_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` rows (seed ``seed``) of the ground truth drawn from ``truth_seed``: float32 features from
    N(0, 1) and a 0/1 label, Bernoulli of the logistic of a linear term plus pairwise interactions of the
    informative features."""
    truth = np.random.default_rng(truth_seed)
    weights = truth.normal(0, 1, informative)
    pairs = truth.integers(0, informative, (informative, 2))
    strength = truth.normal(0, 1, informative)
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, (rows, features)).astype(np.float32)
    logit = x[:, :informative] @ weights + (x[:, pairs[:, 0]] * x[:, pairs[:, 1]]) @ strength
    y = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return x, y


class RoundTimes:
    """An XGBoost training callback that records every boosting round's wall and CPU seconds."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.cpu: list[float] = []
        self._start = self._cpu = 0.0

    def before_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        self._start, self._cpu = time.perf_counter(), time.process_time()
        return False

    def after_iteration(self, model: Any, epoch: int, evals_log: Any) -> bool:
        self.times.append(time.perf_counter() - self._start)
        self.cpu.append(time.process_time() - self._cpu)
        return False


def _callback(times: RoundTimes) -> Any:
    """``times`` as an ``xgboost.callback.TrainingCallback`` (subclassed here: xgboost loads late)."""
    from xgboost.callback import TrainingCallback

    class Callback(TrainingCallback):
        before_iteration = times.before_iteration
        after_iteration = times.after_iteration

    return Callback()


def train(args: argparse.Namespace, peers: Peers) -> dict[str, Any]:
    """Build this worker's shard, boost, evaluate; the figures every rank reports."""
    import xgboost as xgb

    x, y = synthetic(args.rows, args.features, args.informative, args.seed + peers.rank, args.seed)
    vx, vy = synthetic(args.valid_rows, args.features, args.informative, args.seed + VALID_SEED + peers.rank, args.seed)
    quantile = args.tree_method == "hist"  # approx sketches per round from a plain DMatrix
    train_set = (xgb.QuantileDMatrix(x, y, max_bin=args.max_bin, nthread=args.threads) if quantile
                 else xgb.DMatrix(x, y, nthread=args.threads))
    valid = xgb.DMatrix(vx, vy, nthread=args.threads)
    params = {"objective": "binary:logistic", "tree_method": args.tree_method, "max_depth": args.max_depth,
              "eta": args.learning_rate, "max_bin": args.max_bin, "nthread": args.threads, "seed": args.seed,
              "eval_metric": ["logloss", "auc", "error"]}
    times = RoundTimes()
    kubebench.mark("first_step")
    booster = xgb.train(params, train_set, num_boost_round=args.warmup_rounds + args.rounds,
                        callbacks=[_callback(times)], verbose_eval=False)
    kubebench.mark("last_step")
    quality = _scores(booster.eval_set([(valid, "valid")]))
    return {"booster": booster, "times": times, "quality": quality}


def _scores(text: str) -> dict[str, float]:
    """``[0]\tvalid-logloss:0.5\tvalid-auc:0.8`` → ``{"valid_logloss": 0.5, "valid_auc": 0.8}``."""
    fields = [f.split(":") for f in text.split("\t")[1:]]
    return {name.replace("-", "_"): float(value) for name, value in fields}


def model_sha256(booster: Any) -> str:
    """SHA-256 of the trained model (UBJSON): workers that boosted together hold the same trees."""
    return hashlib.sha256(bytes(booster.save_raw(raw_format="ubj"))).hexdigest()


def report(args: argparse.Namespace, peers: Peers, figures: dict[str, Any]) -> None:
    """Sum the workers' rates (XGBoost's allreduce); rank 0 prints and writes the run's numbers."""
    from xgboost import collective

    times: RoundTimes = figures["times"]
    measured = times.times[args.warmup_rounds:]
    own_rate = args.rows * len(measured) / sum(measured)
    rank, world = collective.get_rank(), collective.get_world_size()
    rate = float(collective.allreduce(np.array([own_rate]), collective.Op.SUM)[0]) if world > 1 else own_rate
    if rank == 0:
        write_step_times(args.warmup_rounds, args.rows, world, times.times, cpu_seconds=times.cpu)
        metrics = {"rows_per_sec": rate, "rows_per_sec_per_worker": rate / world,
                   "rounds_per_sec": len(measured) / sum(measured), **step_metrics(measured),
                   "boosting_seconds": sum(times.times), "rows": float(args.rows * world),
                   "rounds": float(len(times.times)), **figures["quality"]}
        print(f"rows/sec: {rate:.1f}", flush=True)
        kubebench.report(**metrics)
        _write_outputs(args, world, figures["booster"])
    report_replica(rank, world, model_sha256(figures["booster"]), own_rate)


def _write_outputs(args: argparse.Namespace, world: int, booster: Any) -> None:
    import xgboost as xgb

    out, result = os.environ.get("KUBEBENCH_EXP_OUTPUT_PATH"), os.environ.get("KUBEBENCH_EXP_RESULT_PATH")
    config = {k: v for k, v in vars(args).items()} | {"world_size": world, "xgboost": xgb.__version__}
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "xgb_train.json").write_text(json.dumps(config, indent=1) + "\n")
    if result:
        info = {"framework": f"xgboost {xgb.__version__}", "tree_method": args.tree_method,
                "trees": str(booster.num_boosted_rounds()), "objective": "binary:logistic"}
        Path(result).mkdir(parents=True, exist_ok=True)
        (Path(result) / "result.json").write_text(json.dumps(info, indent=1) + "\n")


def describe(args: argparse.Namespace, peers: Peers) -> None:
    """The start-up banner (``threads=`` is what ``kubebench scaling`` reads)."""
    print(f"xgb_train: rows={args.rows} per worker, features={args.features}, world_size={peers.world_size}, "
          f"launcher={peers.source}, threads={args.threads}", flush=True)
    print_header({"Dataset": f"synthetic, {args.informative} informative of {args.features} features",
                  "Rows": f"{args.rows * peers.world_size} global, {args.rows} per worker",
                  "Rounds": f"{args.rounds} measured after {args.warmup_rounds}",
                  "Trees": f"{args.tree_method}, depth {args.max_depth}, {args.max_bin} bins, eta {args.learning_rate}"})


def run(args: argparse.Namespace, peers: Peers) -> None:
    """Start the tracker (rank 0 of several), join the collective, train and report."""
    from xgboost import collective
    from xgboost.tracker import RabitTracker

    kubebench.mark("imports_done")
    if peers.rank == 0:
        describe(args, peers)
    with ExitStack() as stack:
        tracker = None
        if peers.world_size > 1:
            if peers.rank == 0:
                tracker = RabitTracker(n_workers=peers.world_size, host_ip="0.0.0.0", port=peers.port,
                                       sortby="task", timeout=INIT_TIMEOUT_S)
                tracker.start()
            stack.enter_context(collective.CommunicatorContext(
                dmlc_tracker_uri=peers.host, dmlc_tracker_port=peers.port, dmlc_task_id=str(peers.rank),
                dmlc_timeout=INIT_TIMEOUT_S))
            collective.allreduce(np.zeros(1), collective.Op.SUM)  # every worker is there
        kubebench.mark("rendezvous_done")
        report(args, peers, train(args, peers))
    if tracker is not None:
        tracker.wait_for()


def main(argv: list[str] | None = None) -> None:
    """Entry point: parse arguments, find the peers, size the threads, then train (imports XGBoost)."""
    args = parse_args(argv)
    try:
        peers = xgboost_peers()
    except PeersError as e:
        sys.exit(f"xgb_train: {e}")
    args.threads = args.threads or max(1, available_cpus() // peers.local_world)
    run(args, peers)


if __name__ == "__main__":
    main()
