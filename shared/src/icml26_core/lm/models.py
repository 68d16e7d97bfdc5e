"""Small Llama-style causal language models built from a config, at named sizes.

A named size counts the *non-embedding* parameters (the transformer blocks and the
final norm), as in Kaplan et al. (2020), so that the name does not depend on the
tokenizer. The token embedding is tied to the output head (as in SmolLM2) and adds
``vocab_size * hidden_size`` parameters:

| size | hidden | layers | heads | MLP | non-embedding | total, V=256 | total, V=49152 |
| --- | --- | --- | --- | --- | --- | --- | --- |
| 1M | 128 | 4 | 4 | 480 | 1,000,576 | 1,033,344 | 7,292,032 |
| 3M | 192 | 6 | 6 | 640 | 3,099,072 | 3,148,224 | 12,536,256 |
| 10M | 320 | 8 | 5 | 864 | 9,917,760 | 9,999,680 | 25,646,400 |
| 30M | 512 | 10 | 8 | 1280 | 30,157,312 | 30,288,384 | 55,323,136 |

(Counts from :func:`count_parameters`, checked in the tests.) The architecture is
transformers' ``LlamaForCausalLM``: pre-norm RMSNorm, rotary position embeddings,
SwiGLU MLP, no biases, multi-head attention (``num_key_value_heads`` can be
overridden for grouped-query attention).
"""

from __future__ import annotations

from typing import Any

from icml26_core._lazy import require

__all__ = ["LLAMA_SIZES", "count_parameters", "tiny_llama", "tiny_llama_config"]

# name -> (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size)
LLAMA_SIZES: dict[str, tuple[int, int, int, int]] = {
    "1M": (128, 4, 4, 480),
    "3M": (192, 6, 6, 640),
    "10M": (320, 8, 5, 864),
    "30M": (512, 10, 8, 1280),
}


def tiny_llama_config(
    size: str = "1M", vocab_size: int = 256, *, max_seq_len: int = 1024, **overrides: Any
) -> Any:
    """The ``LlamaConfig`` of a named size.

    Args:
        size: One of :data:`LLAMA_SIZES` (``"1M"``, ``"3M"``, ``"10M"``, ``"30M"``).
        vocab_size: Number of token ids: 256 for bytes, 49152 for the SmolLM2 tokenizer.
        max_seq_len: Longest sequence the model declares (``max_position_embeddings``);
            rotary embeddings have no learned positions, so this costs nothing.
        **overrides: Any other ``LlamaConfig`` field (e.g. ``num_key_value_heads=2``,
            ``attn_implementation="eager"``), applied last.

    Returns:
        A ``transformers.LlamaConfig`` with tied embeddings and ``use_cache=False``
        (training does not need a key-value cache; ``generate`` turns it on).

    Raises:
        ValueError: If ``size`` is unknown or ``vocab_size``/``max_seq_len`` is not a
            positive integer.
    """
    if size not in LLAMA_SIZES:
        raise ValueError(f"size must be one of {list(LLAMA_SIZES)}, got {size!r}")
    for arg, value in (("vocab_size", vocab_size), ("max_seq_len", max_seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{arg} must be a positive int, got {value!r}")
    transformers = require("transformers", "lm")
    hidden, layers, heads, mlp = LLAMA_SIZES[size]
    fields: dict[str, Any] = {
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "intermediate_size": mlp,
        "max_position_embeddings": max_seq_len,
        "tie_word_embeddings": True,
        "use_cache": False,
        "rms_norm_eps": 1e-5,
        # Byte vocabularies have no special tokens; a pretrained tokenizer passes its own.
        "bos_token_id": None,
        "eos_token_id": None,
        "pad_token_id": None,
    }
    fields.update(overrides)
    return transformers.LlamaConfig(**fields)


def tiny_llama(
    size: str = "1M",
    vocab_size: int = 256,
    *,
    max_seq_len: int = 1024,
    seed: int = 0,
    device: str | Any = "cpu",
    dtype: Any = None,
    **overrides: Any,
) -> Any:
    """A freshly initialised Llama-style causal LM of a named size (no download).

    Weights are drawn from transformers' Llama initialisation (normal, std 0.02) under
    ``seed``, without touching torch's global random state.

    Args:
        size: One of :data:`LLAMA_SIZES`; see the table in this module's docstring.
        vocab_size: 256 for :class:`icml26_core.datasets.ByteTokenizer`, or
            ``len(tokenizer)`` of a pretrained tokenizer (49152 for SmolLM2).
        max_seq_len: Longest sequence the model accepts.
        seed: Seed of the initial weights.
        device: Where to put the model (``"cpu"``, ``"cuda"``, ``"auto"``).
        dtype: Parameter dtype, e.g. ``torch.bfloat16``; float32 when None.
        **overrides: Extra ``LlamaConfig`` fields (see :func:`tiny_llama_config`).

    Returns:
        A ``transformers.LlamaForCausalLM`` in training mode; ``model(ids).logits`` has
        shape (batch, seq_len, vocab_size) for int64 ``ids`` of shape (batch, seq_len).

    Raises:
        ValueError: On an unknown size or a bad ``vocab_size``/``max_seq_len``/``seed``.

    Example:
        >>> from icml26_core.lm import count_parameters, tiny_llama
        >>> model = tiny_llama("1M", vocab_size=256)
        >>> count_parameters(model, non_embedding=True)
        1000576
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a nonnegative int, got {seed!r}")
    torch = require("torch", "lm")
    transformers = require("transformers", "lm")
    from icml26_core.device import torch_device

    config = tiny_llama_config(size, vocab_size, max_seq_len=max_seq_len, **overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(config)
    model.to(device=torch_device(device), dtype=dtype)
    model.train()
    return model


def count_parameters(model: Any, *, non_embedding: bool = False) -> int:
    """Number of distinct parameters of ``model`` (tied weights counted once).

    Args:
        model: A ``torch.nn.Module``.
        non_embedding: Leave out the token embedding (and an untied output head of the
            same shape), i.e. count what the named sizes count.

    Returns:
        The parameter count.
    """
    params = {id(p): p for p in model.parameters()}
    total = sum(p.numel() for p in params.values())
    if not non_embedding:
        return total
    skip: dict[int, Any] = {}
    for getter in ("get_input_embeddings", "get_output_embeddings"):
        module = getattr(model, getter, lambda: None)()
        if module is not None:
            skip[id(module.weight)] = module.weight
    return total - sum(p.numel() for p in skip.values())
