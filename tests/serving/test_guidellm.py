"""GuideLLM run for real as the load generator of a ``kind: Serving`` job, its report read by the
``guidellm`` post-processor: the interop path of docs/serving.md, end to end.

The server is the fake of known behaviour (first token after ``TTFT``, then one every ``TPOT``), so
the stored metrics can be held to the truth: a unit or a mapping gone wrong (milliseconds taken for
seconds, GuideLLM's TPOT-with-first-token taken for ours) is off by far more than the tolerance. GuideLLM
lives in a venv of its own (``make .venv-guidellm/.installed``, which ``make test`` builds); it needs a
tokenizer, and this machine reaches no model hub, so the test writes one (a word-level vocabulary, one
token per word, as the servers count them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

pytestmark = pytest.mark.slow

VENV = Path(os.environ.get("KUBEBENCH_GUIDELLM_VENV", Path(__file__).parents[2] / ".venv-guidellm"))
GUIDELLM = VENV / "bin" / "guidellm"
TTFT, TPOT, REQUESTS, PROMPT, OUTPUT = 0.3, 0.03, 12, 24, 8

TOKENIZER = """
import json, sys
from pathlib import Path
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
out = Path(sys.argv[1])
out.mkdir()
tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, **{f"w{i}": i for i in range(1, 512)}}, unk_token="[UNK]"))
tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tokenizer.decoder = decoders.WordPiece()
tokenizer.save(str(out / "tokenizer.json"))
# No unk_token in the config: as a special token it would be dropped from the decoded prompts, and
# GuideLLM's synthetic prompts (English words, unknown here) would be empty.
(out / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast",
                                                       "model_max_length": 1024}))
"""

SPEC = """
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
def guidellm() -> Path:
    if not GUIDELLM.exists():
        pytest.skip(f"GuideLLM is not installed in {VENV} (make .venv-guidellm/.installed)")
    return GUIDELLM


def test_guidellm_as_the_load_of_a_serving_job_gives_the_server_s_true_latencies(guidellm: Path,
                                                                                 tmp_path: Path) -> None:
    tokenizer = tmp_path / "tokenizer"
    subprocess.run([VENV / "bin" / "python", "-c", TOKENIZER, tokenizer], check=True, timeout=300)
    spec = tmp_path / "guidellm.yaml"
    spec.write_text(SPEC.format(guidellm=guidellm, python=sys.executable, tokenizer=tokenizer, requests=REQUESTS,
                                prompt=PROMPT, output=OUTPUT, ttft=TTFT, tpot=TPOT))
    config = settings(home=tmp_path / "home")
    store = open_store(config.store_url)
    execute(plan_experiment(load_spec(spec), config, "guidellm"), store)

    (run,) = store.runs("guidellm")
    assert run.status == "succeeded", run.reason + run.log_tail
    m = run.metrics
    assert m["requests_measured"] == REQUESTS and m["error_rate"] == 0
    # The fake server's schedule is exact; what a client adds on a busy machine is a few milliseconds
    # per request (tens at worst), never a factor.
    assert TTFT <= m["ttft_p50"] < TTFT * 1.5, m
    assert TPOT * 0.9 <= m["tpot_p50"] < TPOT * 1.5, m
    assert TTFT + (OUTPUT - 1) * TPOT <= m["e2e_p50"] < (TTFT + (OUTPUT - 1) * TPOT) * 1.5, m
    # GuideLLM sent PROMPT tokens and asked for OUTPUT, and the server's usage says so: each token rate
    # is its count times the request rate
    assert m["input_tokens_per_s"] == pytest.approx(PROMPT * m["request_throughput"], rel=0.05), m
    assert m["output_tokens_per_s"] == pytest.approx(OUTPUT * m["request_throughput"], rel=0.05), m
    output = config.experiments_root / "guidellm" / run.run_id / "output"
    assert (output / "benchmarks.json").stat().st_size > 0
    assert sorted(p.name for p in output.glob("*.log")) == ["load-0.log", "server-0.log"]
