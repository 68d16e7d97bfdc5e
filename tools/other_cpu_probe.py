"""Print which kernels the numerical libraries picked, and hashes of their results.

Run by ``tools/other_cpu.sh --probe`` under an emulation, and plainly with
``uv run python tools/other_cpu_probe.py``: a hash that differs between the two is a
kernel the emulation changed. Hashes are of the exact bytes, so one last-bit difference
shows.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re

import numpy as np


def _hash(a: object) -> str:
    return hashlib.sha1(np.ascontiguousarray(np.asarray(a)).tobytes()).hexdigest()[:10]


def main() -> None:
    """Print one line per library feature: the kernel it chose or a result's hash."""
    out: dict[str, object] = {}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        np.show_runtime()
    runtime = buf.getvalue()
    found = re.search(r"'found': \[(.*?)\]", runtime)
    out["numpy simd found"] = found.group(1) if found else "?"

    import scipy.linalg
    import threadpoolctl

    for info in threadpoolctl.threadpool_info():
        if info.get("internal_api") == "openblas":
            lib = "scipy" if "scipy.libs" in info["filepath"] else "numpy"
            out[f"openblas ({lib}) kernel"] = info.get("architecture")
            out[f"openblas ({lib}) threads"] = info.get("num_threads")

    rng = np.random.default_rng(0)
    x = rng.standard_normal(10007)
    a = rng.standard_normal((300, 300))
    b = rng.standard_normal((300, 300))
    out["numpy exp float64"] = _hash(np.exp(x))
    out["numpy log float64"] = _hash(np.log(np.abs(x) + 1e-3))
    out["numpy exp float32"] = _hash(np.exp(x.astype(np.float32)))
    out["numpy matmul (openblas)"] = _hash(a @ b)
    out["numpy solve (openblas)"] = _hash(np.linalg.solve(a, b))
    out["scipy lu (openblas)"] = _hash(scipy.linalg.lu_factor(a)[0])

    import torch

    if os.environ.get("ICML26_TORCH_THREADS"):  # as tools/other_cpu_threads.py does
        torch.set_num_threads(int(os.environ["ICML26_TORCH_THREADS"]))
    out["torch cpu capability"] = torch.backends.cpu.get_cpu_capability()
    out["torch threads"] = torch.get_num_threads()
    t = torch.from_numpy(x).float()
    out["torch exp float32"] = _hash(torch.exp(t).numpy())
    out["torch sum float32 (threads)"] = _hash(torch.from_numpy(np.tile(x, 100)).float().sum())
    out["torch matmul float32"] = _hash(torch.from_numpy(a).float() @ torch.from_numpy(b).float())
    out["torch matmul float64 (mkl)"] = _hash(torch.from_numpy(a) @ torch.from_numpy(b))
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3)
    with torch.no_grad():
        out["torch conv2d (onednn)"] = _hash(conv(t[:1536].reshape(2, 3, 16, 16)))

    try:
        import jax.numpy as jnp
    except ImportError:
        out["jax"] = "not installed"
    else:
        out["jax exp float32"] = _hash(jnp.exp(jnp.asarray(x.astype(np.float32))))
        out["jax matmul float32"] = _hash(
            jnp.asarray(a.astype(np.float32)) @ jnp.asarray(b.astype(np.float32))
        )
    for key, value in out.items():
        print(f"{key:30s} {value}")


if __name__ == "__main__":
    main()
