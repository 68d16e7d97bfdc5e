"""Measure the numbers quoted in the language-model section of shared/README.md.

    uv run python shared/benchmarks/lm_numbers.py [--cache DIR] [--steps 300]

SmolLM2 load times (first load converts the GGUF file into a fresh cache folder), its
loss on the held-out paragraph of the tests and on Shakespeare, and a 1M byte-level model
trained on Shakespeare. Prints a JSON object.
"""

import argparse
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

LOAD = (
    "import time, torch; torch.set_num_threads(1); t = time.perf_counter();"
    "from icml26_core.lm import load_smollm2; load_smollm2(); print(time.perf_counter() - t)"
)


def paragraph() -> str:
    path = Path(__file__).parents[1] / "tests" / "test_lm_smollm2.py"
    spec = importlib.util.spec_from_file_location("test_lm_smollm2", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PARAGRAPH


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default=None, help="fresh cache folder (default: a temp dir)")
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="icml26-lm-")
    os.environ["ICML26_CACHE"] = cache  # this process and the two load subprocesses
    torch.set_num_threads(1)
    out: dict = {"torch": torch.__version__}
    for label in ("first_load_s", "cached_load_s"):
        run = subprocess.run(
            [sys.executable, "-c", LOAD], capture_output=True, text=True, check=True
        )
        out[label] = float(run.stdout.split()[-1])

    import transformers
    from icml26_core.datasets import load_text
    from icml26_core.lm import cosine_schedule, evaluate_loss, load_smollm2, tiny_llama, train_lm
    from icml26_core.lm.training import default_optimizer

    out["transformers"] = transformers.__version__
    model, tok = load_smollm2()
    ids = np.asarray(tok.encode(paragraph()))
    out["paragraph_tokens"] = len(ids)
    out["uniform_loss"] = math.log(len(tok))
    out["paragraph_loss_float32"] = evaluate_loss(model, ids, batch_size=1, seq_len=len(ids) - 1)
    bf16, _ = load_smollm2(dtype="bfloat16")
    out["paragraph_loss_bfloat16"] = evaluate_loss(bf16, ids, batch_size=1, seq_len=len(ids) - 1)
    corpus = load_text("shakespeare")
    val_smol = corpus.tokens("validation", "smollm2")
    out["smollm2_shakespeare_val_loss"] = evaluate_loss(
        model, val_smol, batch_size=8, seq_len=128, max_batches=8
    )

    train, val = corpus.tokens("train"), corpus.tokens("validation")
    tiny = tiny_llama("1M", vocab_size=256, seed=0)
    opt = default_optimizer(tiny, lr=3e-3)
    history = train_lm(
        tiny,
        train,
        val,
        steps=args.steps,
        batch_size=16,
        seq_len=128,
        optimizer=opt,
        scheduler=cosine_schedule(opt, warmup_steps=args.steps // 10, total_steps=args.steps),
        eval_every=max(1, args.steps // 6),
        eval_batches=16,
        seed=0,
    )
    out["tiny_1M"] = {
        k: getattr(history, k) for k in ("step", "val_loss", "val_perplexity", "wall_time")
    }
    out["tiny_1M_full_validation_loss"] = evaluate_loss(tiny, val, batch_size=32, seq_len=128)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
