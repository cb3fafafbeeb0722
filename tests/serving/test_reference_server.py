"""The reference server: kubebench's transformer (``llm_model``) whose KV-cache decoding matches its
full forward, served over HTTP with continuous batching, and measured by the load generator."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request

import pytest

torch = pytest.importorskip("torch")

from kubebench.efficiency.flops import TransformerShape  # noqa: E402
from kubebench.testing.llm_fake import AppThread  # noqa: E402
from kubebench.workloads import llm_load, llm_server  # noqa: E402
from kubebench.workloads.llm_engine import Engine, ModelConfig, Sequence, build_model, encode  # noqa: E402
from kubebench.workloads.llm_model import Transformer  # noqa: E402

CFG = ModelConfig(vocab=512, dim=64, layers=2, heads=4, max_seq=128)


def generate(engine: Engine, prompts: list[list[int]], n: int) -> list[list[int]]:
    """Greedy tokens of every prompt, submitted at once (so decoded in one batch)."""
    outputs: list[list[int]] = [[] for _ in prompts]
    finished = threading.Semaphore(0)

    def emitter(i: int):
        def emit(token: int | None) -> None:
            if token is None:
                finished.release()
            else:
                outputs[i].append(token)
        return emit

    for i, prompt in enumerate(prompts):
        engine.submit(Sequence(prompt, n, emitter(i)))
    for _ in prompts:
        assert finished.acquire(timeout=120)
    return outputs


def recompute(model: Transformer, prompt: list[int], n: int) -> list[int]:
    """Greedy tokens without a KV cache: the whole sequence through the training forward at every step."""
    tokens = list(prompt)
    for _ in range(n):
        with torch.inference_mode():
            logits = model(torch.tensor([tokens]))[0, -1]
        best = int(logits.argmax())
        tokens.append(best if best != 0 else 1 + int(logits[1:].argmax()))
    return tokens[len(prompt):]


def test_batched_kv_cache_decoding_equals_a_full_recompute() -> None:
    torch.manual_seed(0)
    model = build_model(CFG, seed=3)
    engine = Engine(model, max_batch=3)
    engine.start()
    try:
        prompts = [encode("a b c", CFG.vocab), encode("the quick brown fox jumps", CFG.vocab), [5, 9], [7] * 11]
        got = generate(engine, prompts, 6)  # four prompts, three slots: one waits for a free slot
    finally:
        engine.stop()
    assert got == [recompute(model, p, 6) for p in prompts]
    assert engine.stats["tokens_total"] == 24 and engine.free and not engine.running


@pytest.mark.parametrize("kv_heads,mlp", [(4, "gelu"), (2, "swiglu"), (1, "swiglu")])
def test_cached_forward_gives_the_logits_of_the_full_forward(kv_heads: int, mlp: str) -> None:
    """Prefill of two rows of different lengths, then single-token steps, against the causal forward of
    each whole sequence; with grouped-query attention the cache holds only the kv heads."""
    shape = TransformerShape(layers=2, d_model=64, heads=4, kv_heads=kv_heads, ffn=96, vocab=300, seq_len=32, mlp=mlp)
    torch.manual_seed(1)
    model = Transformer(shape).eval()
    caches = model.kv_cache(3)
    assert caches[0].shape == (3, 2, kv_heads, 32, 16)
    seqs = {2: torch.randint(1, 300, (12,)).tolist(), 0: torch.randint(1, 300, (9,)).tolist()}
    lengths = {2: 7, 0: 5}  # tokens prefilled into cache rows 2 and 0; the rest come one step at a time
    for slot, n in lengths.items():
        mask = torch.ones(n, n, dtype=torch.bool).tril()[None, None]
        model.forward_cached(torch.tensor([seqs[slot][:n]]), torch.arange(n)[None], caches, torch.tensor([slot]), mask)
    for _ in range(4):
        slots = list(seqs)
        tokens = torch.tensor([[seqs[s][lengths[s]]] for s in slots])
        positions = torch.tensor([[lengths[s]] for s in slots])
        mask = (torch.arange(int(positions.max()) + 1)[None] <= positions)[:, None, None, :]
        got = model.forward_cached(tokens, positions, caches, torch.tensor(slots), mask)
        with torch.inference_mode():
            want = torch.stack([model(torch.tensor([seqs[s][:lengths[s] + 1]]))[0, -1] for s in slots])
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
        lengths = {s: n + 1 for s, n in lengths.items()}


@pytest.fixture(scope="module")
def server():
    args = llm_server.parse_args(["--max-batch", "4", "--dim", "64", "--vocab", "512", "--max-seq", "256"])
    engine = llm_server.build_engine(args)
    with AppThread(lambda: llm_server.make_app(engine)) as running:
        yield running
    engine.stop()


def test_serves_openai_endpoints(server: AppThread) -> None:
    base = server.url
    models = json.load(urllib.request.urlopen(base + "/models"))
    assert models["data"][0]["id"] == llm_server.MODEL_NAME
    request = urllib.request.Request(base + "/completions", method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps({"model": "x", "prompt": "hello there", "max_tokens": 5,
                                                      "ignore_eos": True}).encode())
    answer = json.load(urllib.request.urlopen(request))
    assert answer["usage"] == {"prompt_tokens": 2, "completion_tokens": 5, "total_tokens": 7}
    assert len(answer["choices"][0]["text"].split()) == 5
    health = urllib.request.urlopen(server.url.removesuffix("/v1") + "/health").read()
    assert health == b"ok"


def post(server: AppThread, path: str, body: dict) -> dict:
    request = urllib.request.Request(server.url + path, method="POST", headers={"Content-Type": "application/json"},
                                     data=json.dumps(body).encode())
    return json.load(urllib.request.urlopen(request))


@pytest.mark.parametrize("messages,prompt_tokens", [
    ([{"role": "user", "content": "one two three"}], 3),
    # OpenAI's content parts, as GuideLLM sends them (the server once answered them with a 500)
    ([{"role": "user", "content": [{"type": "text", "text": "one two"}, {"type": "text", "text": "three four"}]}], 4),
    ([{"role": "system", "content": "be brief"}, {"role": "user", "content": "one two three"}], 5),
])
def test_chat_prompts_count_every_message_s_text(server: AppThread, messages: list, prompt_tokens: int) -> None:
    answer = post(server, "/chat/completions", {"messages": messages, "max_tokens": 3, "ignore_eos": True})
    assert answer["usage"]["prompt_tokens"] == prompt_tokens
    assert len(answer["choices"][0]["message"]["content"].split()) == 3


def test_completion_prompts_may_be_token_ids_or_a_batch_of_texts(server: AppThread) -> None:
    assert post(server, "/completions", {"prompt": [5, 6, 7, 8], "max_tokens": 2})["usage"]["prompt_tokens"] == 4
    assert post(server, "/completions", {"prompt": ["a b", "c"], "max_tokens": 2})["usage"]["prompt_tokens"] == 3


@pytest.mark.parametrize("path,body,expected", [
    ("/chat/completions", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     b"only text content parts"),
    ("/chat/completions", {"messages": [{"role": "user", "content": 7}]}, b"content must be"),
    ("/chat/completions", {"messages": []}, b"non-empty list"),
    ("/completions", {"prompt": [{"x": 1}]}, b"prompt must be"),
    ("/completions", {"prompt": [1, "a"]}, b"prompt must be"),
])
def test_a_malformed_body_is_a_400_naming_what_is_wrong(server: AppThread, path: str, body: dict,
                                                         expected: bytes) -> None:
    with pytest.raises(urllib.error.HTTPError) as error:
        post(server, path, body)
    assert error.value.code == 400 and expected in error.value.read()


def test_a_request_the_model_cannot_hold_is_a_400(server: AppThread) -> None:
    request = urllib.request.Request(server.url + "/completions", method="POST",
                                     headers={"Content-Type": "application/json"},
                                     data=json.dumps({"prompt": "x", "max_tokens": 10_000}).encode())
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request)
    assert error.value.code == 400 and b"max_tokens" in error.value.read()


def test_load_generator_measures_the_reference_server(server: AppThread) -> None:
    args = llm_load.parse_args(["--endpoint", server.url, "--concurrency", "4", "--requests", "12",
                                "--input-tokens", "32", "--output-tokens", "16", "--scrape-interval", "0.2"])
    data, _, scrapes = asyncio.run(llm_load.run(args, 0))
    assert all(r.ok and r.output_tokens == 16 and r.input_tokens == 32 and r.tokens_from == "usage"
               for r in data.records), [r.status for r in data.records]
    assert len(data.records) == 12
    metrics_text = scrapes[-1]["text"]
    assert "kubebench_llm_generated_tokens_total" in metrics_text
    served = float(next(line.split()[1] for line in metrics_text.splitlines()
                        if line.startswith("kubebench_llm_generated_tokens_total")))
    assert served >= 16 * 12  # the last scrape is taken after the load: every token of this run is counted
