"""CNN training (or inference) throughput benchmark in TensorFlow 2, the twin of ``kubebench.workloads.cnn``.

Run as ``python -m kubebench.workloads.tf_cnn [--model small|resnet18|resnet50] [--batch-size N] …``
(needs ``pip install 'kubebench[tensorflow]'``). With several workers in ``TF_CONFIG`` (a TFJob) it
trains with ``MultiWorkerMirroredStrategy`` in a custom training loop — Keras 3's ``fit`` does not
work under that strategy — with ring all-reduce on CPU. Same outputs as the PyTorch workload:
``images/sec``, ``KUBEBENCH_METRIC images_per_sec=… step_time_p50/p90/p99=… peak_memory_bytes=…``
from worker 0, and ``step_times.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported: keep logs readable

import numpy as np  # noqa: E402

import kubebench  # noqa: E402

from . import data as datasets  # noqa: E402
from .measure import params_digest, peak_rss_bytes, print_header, report_replica, report_throughput, write_step_times  # noqa: E402
from .options import MODELS, available_cpus, non_negative, positive, positive_float  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line of ``kubebench.workloads.cnn`` where it applies to TensorFlow."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.tf_cnn", description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS, default="small")
    p.add_argument("--batch-size", type=positive, default=32, help="images per step per worker")
    p.add_argument("--steps", type=positive, default=20, help="measured steps")
    p.add_argument("--warmup-steps", type=non_negative, default=5, help="steps run before measuring (traces the graph)")
    p.add_argument("--data", default=datasets.SYNTHETIC, help="'synthetic', or a dataset folder")
    p.add_argument("--image-size", type=positive, default=32, help="of synthetic images (a dataset has its own)")
    p.add_argument("--channels", type=positive, default=3, help="of synthetic images")
    p.add_argument("--num-classes", type=positive, default=10)
    p.add_argument("--width", type=positive, default=16, help="channels of the small CNN's first block")
    p.add_argument("--lr", type=positive_float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--amp", choices=("none", "bf16"), default="none", help="Keras mixed_bfloat16 policy")
    p.add_argument("--jit-compile", action="store_true", help="compile the step with XLA")
    p.add_argument("--forward-only", action="store_true", help="inference: forward passes only")
    p.add_argument("--threads", type=non_negative, default=0, help="intra-op threads (0: CPUs / local workers)")
    return p.parse_args(argv)


def cluster_position() -> tuple[int, int, int]:
    """(rank, workers, workers on this host) from ``TF_CONFIG``; the chief, if any, is rank 0."""
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster, task = config.get("cluster") or {}, config.get("task") or {}
    members = [("chief", a) for a in cluster.get("chief", [])] + [("worker", a) for a in cluster.get("worker", [])]
    if len(members) <= 1:
        return 0, 1, 1
    me = (task.get("type", "worker"), cluster.get(task.get("type", "worker"), [""])[int(task.get("index", 0))])
    rank = members.index(me)
    host = me[1].rsplit(":", 1)[0]
    return rank, len(members), sum(1 for _, a in members if a.rsplit(":", 1)[0] == host)


def make_strategy(tf, workers: int):
    """MultiWorkerMirroredStrategy across the TF_CONFIG cluster, or the default strategy alone."""
    if workers <= 1:
        return tf.distribute.get_strategy()
    impl = tf.distribute.experimental.CommunicationImplementation
    # One all-reduce for all gradients, instead of one round trip per variable.
    options = tf.distribute.experimental.CommunicationOptions(
        bytes_per_pack=64 << 20, implementation=impl.NCCL if tf.config.list_physical_devices("GPU") else impl.RING)
    return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)


def input_dataset(tf, args: argparse.Namespace):
    """A function of the input context giving each worker its own batches (never a global split)."""

    def for_worker(ctx):
        if args.data == datasets.SYNTHETIC:
            images, labels = datasets.synthetic_batch(args.batch_size, args.image_size, args.channels,
                                                      args.num_classes, args.seed + ctx.input_pipeline_id)
            return tf.data.Dataset.from_tensors((images, labels)).repeat()
        shard = datasets.open_split(datasets.resolve(args.data), "train", args.batch_size,
                                    ctx.input_pipeline_id, ctx.num_input_pipelines)

        def batches():
            step = 0
            while True:
                pixels, labels = shard.batch(step)
                yield datasets.normalize(pixels), labels
                step += 1

        spec = (tf.TensorSpec((args.batch_size, *shard.images.shape[1:]), tf.float32),
                tf.TensorSpec((args.batch_size,), tf.int64))
        return tf.data.Dataset.from_generator(batches, output_signature=spec).prefetch(2)

    return for_worker


def make_step(tf, keras, strategy, model, args: argparse.Namespace):
    """A ``tf.function`` doing one synchronous training step (or forward pass) on every worker."""
    global_batch = args.batch_size * strategy.num_replicas_in_sync
    with strategy.scope():
        optimizer = keras.optimizers.SGD(args.lr, momentum=0.9)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def gradients(images, labels):
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            loss = tf.nn.compute_average_loss(loss_fn(labels, logits), global_batch_size=global_batch)
        return loss, tape.gradient(loss, model.trainable_variables)

    def infer(images, labels):
        return tf.reduce_mean(model(images, training=False))

    if args.jit_compile:
        # XLA compiles the model's math; the all-reduce in apply_gradients stays outside it.
        gradients, infer = tf.function(gradients, jit_compile=True), tf.function(infer, jit_compile=True)

    def train(images, labels):
        loss, grads = gradients(images, labels)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # all-reduces across workers
        return loss

    per_replica = infer if args.forward_only else train

    @tf.function
    def step(iterator):
        images, labels = next(iterator)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(per_replica, args=(images, labels)), axis=None)

    return step


def reduce_over_workers(tf, strategy, value: float, op: str = "sum") -> float:
    """``value`` summed (or maxed) over all workers, through the strategy's collectives."""
    values = strategy.experimental_distribute_values_from_function(lambda _ctx: tf.constant([value], tf.float64))
    if op == "max":
        # tf.distribute.ReduceOp has only SUM and MEAN: gather everyone's value and take the largest.
        return float(tf.reduce_max(strategy.gather(values, axis=0)))
    return float(strategy.reduce(tf.distribute.ReduceOp.SUM, values, axis=None)[0])


def peak_memory(tf) -> int:
    """Peak bytes: the first GPU's allocator peak, else this process's peak RSS."""
    if tf.config.list_physical_devices("GPU"):
        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])
    return peak_rss_bytes()


def setup(args: argparse.Namespace):
    """Import TensorFlow with the thread pools sized for the workers sharing this host."""
    rank, workers, local = cluster_position()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads or max(1, available_cpus() // local))
    # Collectives block a thread while waiting for peers: keep a second inter-op thread.
    tf.config.threading.set_inter_op_parallelism_threads(2)
    import keras

    keras.utils.set_random_seed(args.seed)  # same initial weights on every worker
    return tf, rank, workers


def main(argv: list[str] | None = None) -> None:
    """Entry point: parse arguments, run the steps, and report from worker 0."""
    args = parse_args(argv)
    if args.data != datasets.SYNTHETIC:
        try:  # fail with one line before TensorFlow starts, not inside its input pipeline
            shard = datasets.open_split(datasets.resolve(args.data), "train", args.batch_size)
        except (OSError, ValueError) as e:
            sys.exit(f"tf_cnn: {e}")
        # A Keras model's input shape is fixed: take it from the dataset.
        args.image_size, args.channels = shard.images.shape[1], shard.images.shape[3]
    tf, rank, workers = setup(args)
    kubebench.mark("imports_done")
    import keras

    if args.amp == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    from .tf_models import build_model

    strategy = make_strategy(tf, workers)  # MultiWorkerMirroredStrategy joins its peers lazily, at the first step
    kubebench.mark("rendezvous_done")
    with strategy.scope():
        model = build_model(args.model, args.image_size, args.channels, args.num_classes, args.width)
    iterator = iter(strategy.distribute_datasets_from_function(input_dataset(tf, args)))
    step = make_step(tf, keras, strategy, model, args)
    if rank == 0:
        print(f"tf_cnn: batch_size={args.batch_size} per replica, world_size={workers}, "
              f"tensorflow={tf.__version__}, threads={tf.config.threading.get_intra_op_parallelism_threads()}", flush=True)
        print_header({"TensorFlow": tf.__version__, "Model": args.model, "Dataset": args.data,
                      "Mode": "forward-only" if args.forward_only else "training",
                      "Batch size": f"{args.batch_size * workers} global, {args.batch_size} per device",
                      "Num batches": args.steps, "Data format": "NHWC",
                      "Precision": args.amp if args.amp != "none" else "fp32",
                      "Sync": "MultiWorkerMirroredStrategy" if workers > 1 else "none"})
    times = []
    kubebench.mark("first_step")
    for _ in range(args.warmup_steps + args.steps):
        start = time.perf_counter()
        np.asarray(step(iterator))  # fetching the result waits for the step to finish
        times.append(time.perf_counter() - start)
    kubebench.mark("last_step")
    measured = times[args.warmup_steps:]
    own_rate = args.batch_size * len(measured) / sum(measured)
    rate = reduce_over_workers(tf, strategy, own_rate)
    peak = reduce_over_workers(tf, strategy, float(peak_memory(tf)), op="max")
    if rank == 0:
        report_throughput(rate, measured, {"peak_memory_bytes": peak})
        write_step_times(args.warmup_steps, args.batch_size, workers, times)
    report_replica(rank, workers, params_digest(
        np.asarray(v.numpy(), np.float32).tobytes() for v in model.trainable_variables), own_rate)


if __name__ == "__main__":
    main()
