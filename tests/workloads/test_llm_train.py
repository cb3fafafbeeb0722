"""The LLM training workload: its FLOP count against PyTorch's, its data, and real runs (one process,
then two over gloo with DDP and with FSDP2)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import kubebench
from kubebench.efficiency.flops import TransformerShape, flops_per_token, total_params
from kubebench.workloads.llm_data import token_batches
from kubebench.workloads.llm_model import Transformer, loss_of
from kubebench.workloads.llm_options import PRESETS, parse_args

TIMEOUT_S = 300
METRIC = re.compile(r"^KUBEBENCH_METRIC (.*)$", re.MULTILINE)
REPLICA = re.compile(r"^rank (\d+) of (\d+): params_sha256=([0-9a-f]{64}) own_rate=(\S+)$", re.MULTILINE)
DIST_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")

SHAPES = [
    TransformerShape(layers=2, d_model=64, heads=4, kv_heads=4, ffn=176, vocab=512, seq_len=64, tied_embeddings=True),
    TransformerShape(layers=3, d_model=96, heads=6, kv_heads=2, ffn=256, vocab=1000, seq_len=48),  # GQA, untied
    TransformerShape(layers=2, d_model=128, heads=4, kv_heads=4, ffn=512, vocab=300, seq_len=128, mlp="gelu"),
]


@pytest.mark.parametrize("shape", SHAPES, ids=["swiglu-tied", "gqa-untied", "gelu"])
def test_flops_per_token_match_pytorchs_count_of_one_training_step(shape: TransformerShape) -> None:
    torch.manual_seed(0)
    model = Transformer(shape)
    batch = torch.randint(0, shape.vocab, (2, shape.seq_len + 1))
    # The math kernel runs attention as matmuls, which the counter sees (it has no formula for the CPU
    # flash kernel); the formula counts the same products.
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        loss_of(model, batch).backward()
    counted = counter.get_total_flops() / (2 * shape.seq_len)
    assert counted == pytest.approx(flops_per_token(shape), rel=0.05)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_builds_the_model_the_formula_describes(preset: str) -> None:
    shape = PRESETS[preset]
    with torch.device("meta"):  # shapes only: an 8B model costs no memory
        model = Transformer(shape)
    assert sum(p.numel() for p in model.parameters()) == total_params(shape)


def test_a_token_file_is_read_in_disjoint_windows_per_replica(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shape = TransformerShape(layers=1, d_model=8, heads=2, kv_heads=2, ffn=8, vocab=1000, seq_len=4)
    np.save(tmp_path / "tokens.npy", np.arange(200, dtype=np.int32))
    monkeypatch.setenv("KUBEBENCH_DATA_ROOT", str(tmp_path))
    rank0 = token_batches("tokens.npy", shape, 2, 0, 0, 2, torch.device("cpu"))
    rank1 = token_batches("tokens.npy", shape, 2, 0, 1, 2, torch.device("cpu"))
    assert rank0(0).tolist() == [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]]
    assert rank1(0).tolist() == [[8, 9, 10, 11, 12], [12, 13, 14, 15, 16]]
    assert rank0(1)[0, 0] == 16 and rank0(0).dtype == torch.int64
    (tmp_path / "tokens.bin").write_bytes(np.arange(50, dtype=np.uint16).tobytes())  # nanoGPT's format
    assert token_batches(str(tmp_path / "tokens.bin"), shape, 1, 0, 0, 1, torch.device("cpu"))(0).tolist() == [[0, 1, 2, 3, 4]]


@pytest.mark.parametrize("content, message", [
    (np.arange(3), "fewer than one sequence of 5"),
    (np.full(20, 5000), "outside the vocabulary of 1000"),
    (np.zeros((4, 4), dtype=np.int32), "expected a 1-D array of integers"),
    (np.zeros(20, dtype=np.float32), "expected a 1-D array of integers"),
])
def test_a_bad_token_file_is_one_clear_error(tmp_path: Path, content: np.ndarray, message: str) -> None:
    shape = TransformerShape(layers=1, d_model=8, heads=2, kv_heads=2, ffn=8, vocab=1000, seq_len=4)
    np.save(tmp_path / "t.npy", content)
    with pytest.raises(ValueError, match=message):
        token_batches(str(tmp_path / "t.npy"), shape, 1, 0, 0, 1, torch.device("cpu"))
    with pytest.raises(OSError, match="does not exist"):
        token_batches(str(tmp_path / "none.npy"), shape, 1, 0, 0, 1, torch.device("cpu"))


@pytest.mark.parametrize("argv, message", [
    (["--heads", "5"], "must be a multiple of heads"),
    (["--preset", "1b", "--kv-heads", "5"], "must be a multiple of kv_heads"),
    (["--batch-size", "0"], "argument --batch-size"),
    (["--preset", "huge"], "argument --preset"),
])
def test_bad_arguments_exit_with_status_2(argv: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_overriding_the_heads_of_a_preset_without_gqa_keeps_it_without() -> None:
    args = parse_args(["--preset", "small", "--heads", "8", "--d-model", "256", "--layers", "1"])
    assert (args.shape.heads, args.shape.kv_heads, args.shape.d_model, args.shape.layers) == (8, 8, 256, 1)
    assert parse_args(["--preset", "1b", "--heads", "16"]).shape.kv_heads == 4


def test_activation_checkpointing_recomputes_the_same_loss_and_gradients() -> None:
    shape = PRESETS["tiny"]
    batch = torch.randint(0, shape.vocab, (2, shape.seq_len + 1), generator=torch.Generator().manual_seed(0))
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(1)
        model = Transformer(shape, checkpointing)
        loss = loss_of(model, batch)
        loss.backward()
        grads.append((loss.item(), [p.grad.clone() for p in model.parameters()]))
    (plain_loss, plain), (ckpt_loss, ckpt) = grads
    assert ckpt_loss == pytest.approx(plain_loss, rel=1e-6)
    assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(plain, ckpt))


# Real runs ----------------------------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env | extra


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kubebench.workloads.llm_train", *args]


def _metrics(stdout: str) -> list[dict[str, float]]:
    return [{k: float(v) for k, v in (p.split("=", 1) for p in line.split())} for line in METRIC.findall(stdout)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_replicas(tmp_path: Path, world: int, *args: str) -> list[str]:
    """Start ``world`` replicas as a PyTorchJob's would be; their stdouts once all exited with 0."""
    return _run_replicas_env(tmp_path, {}, *args, world=world)


def _run_replicas_env(tmp_path: Path, env: dict[str, str], *args: str, world: int = 1) -> list[str]:
    """:func:`_run_replicas` with more environment variables."""
    port = str(_free_port())
    procs = [
        subprocess.Popen(
            _cmd(*args, "--threads", "1"),
            env=_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE=str(world), RANK=str(rank),
                     LOCAL_RANK=str(rank), KUBEBENCH_EXP_OUTPUT_PATH=str(tmp_path / f"out{rank}"),
                     KUBEBENCH_EXP_RESULT_PATH=str(tmp_path / f"result{rank}"), **env),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for rank in range(world)
    ]
    try:
        outputs = [p.communicate(timeout=TIMEOUT_S) for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err
    return [out for out, _ in outputs]


@pytest.mark.slow
def test_one_process_reports_tokens_flops_and_mfu(tmp_path: Path) -> None:
    (out,) = _run_replicas(tmp_path, 1, "--steps", "6", "--warmup-steps", "1", "--batch-size", "4")
    (m,) = _metrics(out)
    shape = PRESETS["tiny"]
    record = json.loads((tmp_path / "out0" / "step_times.json").read_text())
    assert record["items_per_step"] == 4 * shape.seq_len and len(record["step_seconds"]) == 7
    measured = record["step_seconds"][1:]
    assert m["tokens_per_sec"] == pytest.approx(4 * 64 * 6 / sum(measured))
    assert m["tokens_per_sec_per_device"] == m["tokens_per_sec"]
    assert m["model_flops_per_token"] == flops_per_token(shape) and m["params"] == total_params(shape)
    assert m["tflops_per_device"] == pytest.approx(m["tokens_per_sec"] * flops_per_token(shape) / 1e12)
    assert 0 < m["mfu"] == pytest.approx(m["tflops_per_device"] / m["peak_tflops_per_device"])
    assert m["loss_final"] < m["loss_first"]  # it learns its fixed batch
    info = json.loads((tmp_path / "result0" / "result.json").read_text())
    assert info["precision"] == "fp32" and info["peak_source"].startswith("measured: best 512x512 fp32 matmul")
    assert "joules_per_token" not in m  # no GPU: no energy, and no number made up
    losses = json.loads((tmp_path / "out0" / "llm_train.json").read_text())["loss"]
    assert len(losses) == 7 and losses[0] == pytest.approx(m["loss_first"])


@pytest.mark.slow
def test_ddp_and_fsdp_replicas_stay_in_sync_and_follow_the_same_loss_trajectory(tmp_path: Path) -> None:
    common = ("--steps", "4", "--warmup-steps", "1", "--batch-size", "2", "--seed", "3")
    trajectories = {}
    for parallel in ("ddp", "fsdp"):
        folder = tmp_path / parallel
        outs = _run_replicas(folder, 2, *common, "--parallel", parallel)
        lines = [REPLICA.search(out) for out in outs]
        assert all(lines) and {int(m.group(1)) for m in lines} == {0, 1}
        assert lines[0].group(3) == lines[1].group(3), f"{parallel}: replicas ended with different parameters"
        (metrics,) = _metrics(outs[0])
        assert _metrics(outs[1]) == []  # rank 0 reports for the job
        assert metrics["tokens_per_sec"] == pytest.approx(sum(float(m.group(4)) for m in lines))
        assert json.loads((folder / "result0" / "result.json").read_text())["parallel"] == parallel
        trajectories[parallel] = json.loads((folder / "out0" / "llm_train.json").read_text())["loss"]
    assert len(trajectories["ddp"]) == 5
    assert trajectories["fsdp"] == pytest.approx(trajectories["ddp"], rel=1e-4)
    assert trajectories["ddp"][-1] < trajectories["ddp"][0]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_compile_trains_the_same_model_and_reports_its_rate(tmp_path: Path) -> None:
    # TorchInductor writes C++ and builds it with the system compiler: without one, say so rather than fail
    import shutil

    if not (shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++") or shutil.which("clang++")):
        pytest.skip("torch.compile on a CPU needs a C++ compiler (g++, c++ or clang++): none on PATH")
    common = ("--steps", "2", "--warmup-steps", "1", "--batch-size", "2", "--seed", "5")
    runs = {}
    for compile_ in (False, True):
        folder = tmp_path / ("compiled" if compile_ else "eager")
        cache = folder / "inductor"  # its own cache: a compiled kernel must be built here, not found
        (out,) = _run_replicas_env(folder, {"TORCHINDUCTOR_CACHE_DIR": str(cache)},
                                   *common, *(["--compile"] if compile_ else []))
        (metrics,) = _metrics(out)
        assert metrics["tokens_per_sec"] > 0
        assert re.search(rf"Compiled\W+{'yes' if compile_ else 'no'}", out), out
        runs[compile_] = (metrics, json.loads((folder / "out0" / "llm_train.json").read_text())["loss"], cache)
    (eager, eager_losses, eager_cache), (fast, fast_losses, fast_cache) = runs[False], runs[True]
    assert not any(eager_cache.rglob("*.py")) and any(fast_cache.rglob("*.py")), "Inductor generated no code"
    # the same weights and batch: the first loss is computed before any update; fused kernels round differently
    assert fast["loss_first"] == pytest.approx(eager["loss_first"], rel=1e-4)
    assert fast_losses == pytest.approx(eager_losses, rel=1e-3) and len(fast_losses) == 3
