"""Decode and prefill speed of shared-projection Llamas against stock ``LlamaForCausalLM``.

Every model has the same width (256), depth (4), MLP (768) and 16 query heads of 16
channels, with random weights; what changes is the attention. Each row compares one of
ours with a stock transformers ``LlamaForCausalLM`` holding **the same KV-cache bytes**
(Q-K=V with ``k`` key/value heads caches one tensor of ``k`` heads, stock GQA with
``k / 2`` heads caches two), plus our QKV against stock MHA (the cost of our code
alone) and Q-K=V against stock MHA (what halving the cache costs or saves). Q-K=V
rows come in both value modes: values before RoPE (the default; the cached keys are
turned on every step) and ``value_rope=True`` (values are the rotated keys).

Decode and prefill are timed separately, interleaved A B B A ... in one process after a
warm-up (``icml26_core.timing.compare_times``), and reported as a ratio of medians with
its bootstrap CI (> 1: ours is faster):

- decode: ``--new-tokens`` greedy steps, one token each, from a cache that already holds
  ``--context`` tokens (the cache is cropped back after every timed call);
- prefill: one forward pass over ``--context`` tokens, without cache.

    uv run python packages/qkv-sharing/benchmarks/bench_decode.py [--context 512] [--device cuda]
"""

import argparse
import inspect

import torch
from icml26_core.device import torch_device
from icml26_core.timing import compare_times
from qkv_sharing import cache_nbytes, shared_llama
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, LlamaModel

CACHE_KW = (
    "cache" if "cache" in inspect.signature(LlamaModel.forward).parameters else "past_key_values"
)
SIZE = dict(hidden_size=256, num_hidden_layers=4, intermediate_size=768, head_dim=16)
HEADS = 16


def ours(sharing, n_kv, max_len, device, dtype, value_rope=False):
    model = shared_llama(
        "1M", sharing, n_kv_heads=n_kv, n_heads=HEADS, max_seq_len=max_len, device=device,
        value_rope=value_rope, **SIZE,
    )  # fmt: skip
    return model.to(dtype).eval()


def stock(n_kv, max_len, device, dtype):
    config = LlamaConfig(
        vocab_size=256, num_attention_heads=HEADS, num_key_value_heads=n_kv,
        max_position_embeddings=max_len, tie_word_embeddings=True, bos_token_id=None,
        eos_token_id=None, pad_token_id=None, **SIZE,
    )  # fmt: skip
    torch.manual_seed(0)
    return LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()


def decoder(model, prompt, new_tokens):
    """A zero-argument callable decoding ``new_tokens`` from a prefilled cache."""
    cache = DynamicCache()
    with torch.no_grad():
        logits = model(prompt, use_cache=True, **{CACHE_KW: cache}).logits

    def run():
        tok = logits[:, -1:].argmax(-1)
        with torch.no_grad():
            for _ in range(new_tokens):
                out = model(tok, use_cache=True, **{CACHE_KW: cache}).logits
                tok = out[:, -1:].argmax(-1)
        cache.crop(-new_tokens)

    return run, cache


def prefiller(model, prompt):
    def run():
        with torch.no_grad():
            model(prompt, use_cache=False)

    return run


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch_device(args.device)
    dtype = getattr(torch, args.dtype)
    max_len = args.context + args.new_tokens + 1
    prompt = torch.randint(0, 256, (1, args.context), generator=torch.Generator().manual_seed(0))
    prompt = prompt.to(device)
    pairs = [  # (label, ours: (sharing, n_kv, value_rope), stock n_kv)
        ("QKV MHA vs stock MHA (same bytes)", ("qkv", 16, False), 16),
        ("Q-K=V MHA vs stock GQA 8 kv (same bytes)", ("q-k=v", 16, False), 8),
        ("Q-K=V 4 kv vs stock GQA 2 kv (same bytes)", ("q-k=v", 4, False), 2),
        ("Q-K=V 2 kv vs stock MQA (same bytes)", ("q-k=v", 2, False), 1),
        ("Q-K=V MHA vs stock MHA (half the bytes)", ("q-k=v", 16, False), 16),
        ("Q-K=V rotated values, MHA vs stock GQA 8 kv", ("q-k=v", 16, True), 8),
        ("Q-K=V rotated values, 4 kv vs stock GQA 2 kv", ("q-k=v", 4, True), 2),
        ("Q-K=V rotated values, 2 kv vs stock MQA", ("q-k=v", 2, True), 1),
    ]
    print(
        f"context {args.context}, {args.new_tokens} new tokens, device {device}, {args.dtype}, "
        f"{torch.get_num_threads()} thread(s), {args.repeats} interleaved rounds"
    )
    print(
        "| ours vs stock | cache B ours / stock | decode tok/s ours / stock | decode speed-up "
        "[95% CI] | prefill tok/s ours / stock | prefill speed-up [95% CI] |"
    )
    print("|---|---|---|---|---|---|")
    for label, (sharing, n_kv, value_rope), stock_kv in pairs:
        a = ours(sharing, n_kv, max_len, device, dtype, value_rope)
        b = stock(stock_kv, max_len, device, dtype)
        run_a, cache_a = decoder(a, prompt, args.new_tokens)
        run_b, cache_b = decoder(b, prompt, args.new_tokens)
        dec = compare_times(run_a, run_b, repeats=args.repeats, warmup=1, device=device,
                            names=("ours", "stock"))  # fmt: skip
        pre = compare_times(prefiller(a, prompt), prefiller(b, prompt), repeats=args.repeats,
                            warmup=1, device=device, names=("ours", "stock"))  # fmt: skip
        d, p = dec.speedup(), pre.speedup()
        print(
            f"| {label} | {cache_nbytes(cache_a)} / {cache_nbytes(cache_b)} | "
            f"{args.new_tokens / dec.median_a:.1f} / {args.new_tokens / dec.median_b:.1f} | "
            f"{d.effect:.2f} [{d.ci_low:.2f}, {d.ci_high:.2f}] | "
            f"{args.context / pre.median_a:.0f} / {args.context / pre.median_b:.0f} | "
            f"{p.effect:.2f} [{p.ci_low:.2f}, {p.ci_high:.2f}] |"
        )


if __name__ == "__main__":
    main()
