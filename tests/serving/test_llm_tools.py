"""Other LLM tools run for real in ``kind: Serving`` jobs: GuideLLM as the load generator (its report
read by the ``guidellm`` post-processor), and Hugging Face's ``transformers serve`` as the server
(examples/llm-serving/transformers-serve.yaml, as its header runs it).

GuideLLM runs against the fake server of known behaviour (first token after ``TTFT``, then one every
``TPOT``), so the stored metrics are held to the truth: a unit or a mapping gone wrong (milliseconds
taken for seconds, GuideLLM's TPOT-with-first-token taken for ours) is off by far more than the
tolerance. Both tools live in a venv of their own (``make .venv-llm-tools/.installed``, which ``make
test`` builds); this machine reaches no model hub, so the model and tokenizer they use are written by
examples/llm-serving/tiny_hf_model.py (a tiny random-weight Llama, one token per word).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.runner import execute, plan_experiment
from kubebench.serving.records import find_records, read_records
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
VENV = Path(os.environ.get("KUBEBENCH_LLM_TOOLS_VENV", ROOT / ".venv-llm-tools"))
EXAMPLE = ROOT / "examples" / "llm-serving"
TTFT, TPOT, REQUESTS, PROMPT, OUTPUT = 0.3, 0.03, 12, 24, 8

GUIDELLM_SPEC = """
name: guidellm
job:
  kind: Serving
  command: [{guidellm}, run, --disable-progress,
            --backend, "kind=openai_http,target=$(KUBEBENCH_SERVER_URL),model=fake-llm",
            --profile, "kind=constant,rate=4", --constraint, "kind=max_requests,count={requests}",
            --data, "kind=synthetic_text,prompt_tokens={prompt},output_tokens={output}",
            --tokenizer, "kind=huggingface_auto,model={tokenizer}",
            --output, "kind=json,path=$(KUBEBENCH_EXP_OUTPUT_PATH)/benchmarks.json"]
  server:
    command: [{python}, -m, kubebench.testing.llm_fake, --port, "$(KUBEBENCH_SERVER_PORT)",
              --ttft, "{ttft}", --tpot, "{tpot}"]
    readiness: /v1/models
    startup_timeout: 2m
telemetry: {{enabled: false}}
timeout: 5m
postprocess: [{{kind: guidellm}}]
metrics:
  - {{name: ttft_p50, unit: s, goal: minimize, primary: true}}
  - {{name: tpot_p50, unit: s, goal: minimize}}
"""


@pytest.fixture(scope="module")
def tools() -> Path:
    if not (VENV / "bin" / "guidellm").exists() or not (VENV / "bin" / "transformers").exists():
        pytest.skip(f"the LLM tools are not installed in {VENV} (make .venv-llm-tools/.installed)")
    return VENV / "bin"


@pytest.fixture(scope="module")
def tiny_model(tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("llm-tools") / "tiny-llama"
    subprocess.run([tools / "python", EXAMPLE / "tiny_hf_model.py", out], check=True, timeout=300,
                   capture_output=True)
    return out


def test_guidellm_as_the_load_of_a_serving_job_gives_the_server_s_true_latencies(tools: Path, tiny_model: Path,
                                                                                 tmp_path: Path) -> None:
    spec = tmp_path / "guidellm.yaml"
    spec.write_text(GUIDELLM_SPEC.format(guidellm=tools / "guidellm", python=sys.executable, tokenizer=tiny_model,
                                         requests=REQUESTS, prompt=PROMPT, output=OUTPUT, ttft=TTFT, tpot=TPOT))
    config = settings(home=tmp_path / "home")
    store = open_store(config.store_url)
    execute(plan_experiment(load_spec(spec), config, "guidellm"), store)

    (run,) = store.runs("guidellm")
    assert run.status == "succeeded", run.reason + run.log_tail
    m = run.metrics
    # What GuideLLM itself counted: on a busy machine its max_requests constraint can stop one request
    # short of the count (it stops queuing at the count created, processing at the count processed), so
    # the measured count is the report's own total, never more than asked
    output = config.experiments_root / "guidellm" / run.run_id / "output"
    (report,) = json.loads((output / "benchmarks.json").read_text())["benchmarks"]
    totals = report["metrics"]["request_totals"]
    assert m["requests_measured"] == totals["total"] and REQUESTS - 2 <= totals["total"] <= REQUESTS, (m, totals)
    assert m["error_rate"] == totals["errored"] / totals["total"] == 0, (m, totals)
    # The fake server's schedule is exact; what a client adds on a busy machine is a few milliseconds
    # per request (tens at worst), never a factor.
    assert TTFT <= m["ttft_p50"] < TTFT * 1.5, m
    assert TPOT * 0.9 <= m["tpot_p50"] < TPOT * 1.5, m
    assert TTFT + (OUTPUT - 1) * TPOT <= m["e2e_p50"] < (TTFT + (OUTPUT - 1) * TPOT) * 1.5, m
    # GuideLLM sent PROMPT tokens and asked for OUTPUT, and the server's usage says so: each token rate
    # is its count times the request rate
    assert m["input_tokens_per_s"] == pytest.approx(PROMPT * m["request_throughput"], rel=0.05), m
    assert m["output_tokens_per_s"] == pytest.approx(OUTPUT * m["request_throughput"], rel=0.05), m
    assert (output / "benchmarks.json").stat().st_size > 0
    assert sorted(p.name for p in output.glob("*.log")) == ["load-0.log", "server-0.log"]


def test_transformers_serve_example_measures_a_real_engine(tools: Path, tiny_model: Path, home: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "200"})
    result = runner.invoke(app, ["run", str(EXAMPLE / "transformers-serve.yaml"), "--id", "hf-serve",
                                 "--set", f"model={tiny_model}", "--set", f"transformers={tools / 'transformers'}",
                                 "--set", "duration=3"])
    runs = json.loads(runner.invoke(app, ["results", "hf-serve", "-f", "json"]).stdout)
    assert result.exit_code == 0, result.output + "\n".join(r["reason"] + r["log_tail"] for r in runs)
    assert sorted(r["params"]["rate"] for r in runs) == [2, 8]
    for run in runs:
        m = run["metrics"]
        assert m["error_rate"] == 0 and m["requests_measured"] >= 1 and 0 < m["ttft_p50"] <= m["ttft_p99"], m
        assert m["output_tokens_per_s"] > 0 and m["tpot_p50"] > 0, m
        # Every answer complete (the engine sends no [DONE]: the finish_reason ends it), with the 16
        # tokens asked for, counted by the engine's own usage and seen one by one in the stream.
        (path,) = find_records(home / "experiments" / "hf-serve" / run["run_id"] / "output")
        records = read_records(path).records
        assert records and {(r.status, r.output_tokens, len(r.token_times), r.tokens_from) for r in records} == {
            ("ok", 16, 16, "usage")}
