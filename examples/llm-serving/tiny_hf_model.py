"""Write a tiny Llama with random weights and a word-level tokenizer, in Hugging Face's format, for a
real engine (``transformers serve``) and GuideLLM to use where no model hub is reachable.

    .venv-llm-tools/bin/python examples/llm-serving/tiny_hf_model.py /tmp/tiny-llama [--layers 2 --dim 64]

The tokenizer has one token per word ("w1" … "w511", anything else is "[UNK]"), as kubebench's servers
and load generator count them; there is no end-of-sequence token, so the model writes exactly
``max_tokens`` tokens. It runs in the llm-tools venv (``make .venv-llm-tools/.installed``), which has
transformers and tokenizers; kubebench's own venv does not need them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# A chat is the text of its messages (a string, or OpenAI's list of text parts), one after the other.
CHAT_TEMPLATE = ("{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}{% else %}"
                 "{{ m['content'] | map(attribute='text') | join(' ') }}{% endif %} {% endfor %}")


def write_tokenizer(out: Path, vocab: int) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, **{f"w{i}": i for i in range(1, vocab)}}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.save(str(out / "tokenizer.json"))
    # No unk_token here: as a special token it would be dropped from decoded text, and GuideLLM's
    # synthetic prompts (English words, all unknown) would be empty.
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1024, "chat_template": CHAT_TEMPLATE}
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1))


def write_model(out: Path, vocab: int, layers: int, dim: int, seed: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=dim, intermediate_size=2 * dim, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=None, eos_token_id=None, pad_token_id=0)
    LlamaForCausalLM(config).save_pretrained(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="folder to write (created)")
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write_tokenizer(args.out, args.vocab)
    write_model(args.out, args.vocab, args.layers, args.dim, args.seed)
    print(f"wrote {args.out}: Llama, {args.layers} layers, width {args.dim}, {args.vocab} words")


if __name__ == "__main__":
    main()
