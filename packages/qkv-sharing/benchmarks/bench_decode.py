"""Decode and prefill speed and KV-cache memory of each variant vs standard attention.

Every model is the same transformers Llama (width 256, 4 layers, 16 query heads) with
random weights; only the attention's projection sharing and key/value heads change.
Prints, per variant: prefill tokens/s, greedy decode tokens/s at a long context, the
live cache bytes after decoding and the peak memory (CUDA: max allocated; CPU: the
cache bytes), each also as a ratio to QKV+MHA measured in the same run.

    uv run python packages/qkv-sharing/benchmarks/bench_decode.py [--context 2048] [--device cuda]
"""

import argparse
import time

import torch
from icml26_core.device import synchronize, torch_device
from qkv_sharing import SHARING_VARIANTS, cache_nbytes, shared_llama


def measure(sharing, n_kv, context, new_tokens, device):
    model = shared_llama(
        "1M", sharing, n_kv_heads=n_kv, n_heads=16, hidden_size=256, num_hidden_layers=4,
        intermediate_size=768, max_seq_len=context + new_tokens, device=device,
    ).eval()  # fmt: skip
    prompt = torch.randint(0, 256, (1, context), device=device)
    with torch.no_grad():
        model(prompt[:, :64])  # warm-up
        synchronize(device)
        start = time.perf_counter()
        model(prompt)
        synchronize(device)
        prefill = context / (time.perf_counter() - start)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        out = model.generate(
            prompt, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
            use_cache=True,
            return_dict_in_generate=True,
        )  # fmt: skip
        synchronize(device)
        decode = new_tokens / (time.perf_counter() - start)
    cache = out.cache if hasattr(out, "cache") else out.past_key_values
    cache_bytes = cache_nbytes(cache)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else cache_bytes
    return prefill, decode, cache_bytes, peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch_device(args.device)
    rows = []
    for layout, n_kv in (("MHA", 16), ("GQA-4", 4), ("MQA", 1)):
        for sharing in SHARING_VARIANTS:
            rows.append(
                (sharing, layout, *measure(sharing, n_kv, args.context, args.new_tokens, device))
            )
    base = rows[0]
    print(f"context {args.context}, {args.new_tokens} new tokens, device {device}")
    print(
        "| sharing | heads | prefill tok/s | decode tok/s | decode ratio | cache MiB "
        "| cache ratio | peak MiB | peak ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for sharing, layout, prefill, decode, cache, peak in rows:
        print(
            f"| {sharing} | {layout} | {prefill:.0f} | {decode:.1f} | {decode / base[3]:.2f} | "
            f"{cache / 2**20:.2f} | {cache / base[4]:.3f} | {peak / 2**20:.1f} | "
            f"{peak / base[5]:.3f} |"
        )


if __name__ == "__main__":
    main()
