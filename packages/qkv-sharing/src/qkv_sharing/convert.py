"""Convert a stock Llama checkpoint (e.g. SmolLM2) to a shared key-value (Q-K=V) model.

A stock layer has separate key and value projections ``W_k``, ``W_v`` (each
``n_kv_heads * head_dim`` x ``hidden``); a ``"q-k=v"`` layer has one, ``W_kv``, whose
output is the key (after RoPE) and the value. Two merges:

- ``merge="mean"``: ``W_kv = (W_k + W_v) / 2``. Keys and values both change.
- ``merge="svd"``: ``W_kv = W_k``, so the attention scores are *exactly* the stock
  model's, and each head's values are approximated by a linear map of the keys,
  ``v ~ N_h k``, fitted by least squares (a pseudo-inverse computed by SVD); ``N_h`` is
  folded into the output projection (``o_proj`` columns of the query heads that read
  head ``h`` are multiplied by ``N_h``), because the attention output of those heads is
  ``sum_j a_ij N_h k_j = N_h sum_j a_ij k_j``. Without calibration data the fit is in
  weight space (``N_h = W_v^h pinv(W_k^h)``, the best map for isotropic inputs); with
  ``calibration`` tokens it is fitted on the layer's real inputs
  (``N_h = argmin sum ||v - N_h k||^2`` over the calibration tokens).

Everything else (embeddings, norms, MLPs, queries, rotary settings) is copied. The
converted model is a :class:`~qkv_sharing.llama.SharedQKVLlamaForCausalLM` with half the
KV cache; a short fine-tune recovers most of the perplexity lost (see the experiment).
"""

from __future__ import annotations

from typing import Any

import torch
from icml26_core.validation import check_choice, check_float

from qkv_sharing.llama import SharedQKVLlamaConfig, SharedQKVLlamaForCausalLM

__all__ = ["from_llama"]

_SKIP_CONFIG = {"model_type", "architectures", "transformers_version", "sharing", "asymmetric"}


def _shared_config(config: Any, sharing: str) -> SharedQKVLlamaConfig:
    fields = {k: v for k, v in config.to_dict().items() if k not in _SKIP_CONFIG}
    known = set(SharedQKVLlamaConfig.__dataclass_fields__)
    fields = {k: v for k, v in fields.items() if k in known}
    new = SharedQKVLlamaConfig(sharing=sharing, asymmetric=False, **fields)
    new._attn_implementation = getattr(config, "_attn_implementation", None) or "sdpa"
    return new


def _attention_inputs(model: Any, tokens: torch.Tensor, batch_size: int) -> list[torch.Tensor]:
    """Inputs of every layer's attention (after its RMSNorm) on ``tokens``: (n, hidden) each."""
    layers = model.model.layers
    grabbed: list[list[torch.Tensor]] = [[] for _ in layers]
    hooks = []

    def grab(idx: int):
        def hook(module: Any, args: tuple, kwargs: dict) -> None:
            x = kwargs.get("hidden_states", args[0] if args else None)
            grabbed[idx].append(x.detach().reshape(-1, x.shape[-1]).float())

        return hook

    for idx, layer in enumerate(layers):
        hooks.append(layer.self_attn.register_forward_pre_hook(grab(idx), with_kwargs=True))
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for start in range(0, tokens.shape[0], batch_size):
                model(tokens[start : start + batch_size], use_cache=False)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return [torch.cat(g) for g in grabbed]


def _value_maps(
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    n_kv: int,
    head_dim: int,
    x: torch.Tensor | None,
    ridge: float,
) -> torch.Tensor:
    """``N_h`` (n_kv, head_dim, head_dim) with ``v_h ~ N_h k_h`` by least squares."""
    maps = []
    for h in range(n_kv):
        rows = slice(h * head_dim, (h + 1) * head_dim)
        k_w, v_w = w_k[rows].double(), w_v[rows].double()
        if x is None:
            maps.append(v_w @ torch.linalg.pinv(k_w))  # pinv by SVD
        else:
            k, v = x.double() @ k_w.T, x.double() @ v_w.T  # (n, head_dim)
            gram = k.T @ k
            gram = gram + ridge * gram.diagonal().mean() * torch.eye(head_dim, dtype=gram.dtype)
            maps.append(torch.linalg.solve(gram, k.T @ v).T)
    return torch.stack(maps)


def from_llama(
    model: Any,
    sharing: str = "q-k=v",
    *,
    merge: str = "svd",
    calibration: Any = None,
    calibration_batch_size: int = 8,
    ridge: float = 1e-6,
) -> SharedQKVLlamaForCausalLM:
    """A shared-projection copy of a stock ``LlamaForCausalLM`` (the input is not changed).

    Args:
        model: A ``transformers.LlamaForCausalLM`` (SmolLM2, a core tiny Llama, or a
            :class:`~qkv_sharing.llama.SharedQKVLlamaForCausalLM` with ``sharing="qkv"``).
        sharing: ``"q-k=v"`` (one projection for keys and values), or ``"qkv"`` (a
            plain copy, for comparisons).
        merge: ``"svd"`` (keys kept, values mapped from keys by least squares and
            folded into ``o_proj``) or ``"mean"`` (average of the two projections).
        calibration: Optional int64 token ids, (n_seq, seq_len), for the ``"svd"`` fit
            on real attention inputs; None fits in weight space.
        calibration_batch_size: Sequences per forward pass on the calibration tokens.
        ridge: Relative ridge added to the calibration Gram matrix (numerical safety).

    Returns:
        A :class:`~qkv_sharing.llama.SharedQKVLlamaForCausalLM` on the input's device
        and dtype, in eval mode.

    Raises:
        ValueError: On another ``sharing`` or ``merge``, a model with shared
            projections already, or calibration tokens that are not (n_seq, seq_len).
        TypeError: If ``model`` is not a Llama causal LM.

    Example:
        >>> from icml26_core.lm import tiny_llama
        >>> stock = tiny_llama("1M", num_key_value_heads=2).eval()
        >>> shared = from_llama(stock, merge="svd")
        >>> shared.config.sharing, shared.model.layers[0].self_attn.kv_proj.weight.shape
        ('q-k=v', torch.Size([64, 128]))
    """
    check_choice("sharing", sharing, ("q-k=v", "qkv"))
    check_choice("merge", merge, ("svd", "mean"))
    check_float("ridge", ridge, low=0.0)
    inner = getattr(model, "model", None)
    if inner is None or not hasattr(inner, "layers") or not hasattr(model, "lm_head"):
        raise TypeError(
            f"model must be a transformers LlamaForCausalLM, got {type(model).__name__}"
        )
    if getattr(model.config, "sharing", "qkv") != "qkv":
        raise ValueError(
            f"model already shares projections (sharing={model.config.sharing!r}); "
            "convert from a stock (qkv) model"
        )
    config = model.config
    n_kv = config.num_key_value_heads or config.num_attention_heads
    n_heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // n_heads
    group = n_heads // n_kv
    param = next(model.parameters())

    inputs: list[Any] = [None] * len(inner.layers)
    if calibration is not None and merge == "svd" and sharing == "q-k=v":
        tokens = torch.as_tensor(calibration, dtype=torch.long, device=param.device)
        if tokens.ndim != 2 or tokens.numel() == 0:
            raise ValueError(
                "calibration must be token ids of shape (n_seq, seq_len), "
                f"got {tuple(tokens.shape)}"
            )
        inputs = _attention_inputs(model, tokens, calibration_batch_size)

    new = SharedQKVLlamaForCausalLM(_shared_config(config, sharing)).to(
        device=param.device, dtype=param.dtype
    )
    state = {k: v for k, v in model.state_dict().items()}
    own = new.state_dict()
    with torch.no_grad():
        for name, tensor in own.items():
            if name in state and state[name].shape == tensor.shape:
                tensor.copy_(state[name])
        if sharing == "q-k=v":
            for idx, (old_layer, new_layer) in enumerate(
                zip(inner.layers, new.model.layers, strict=True)
            ):
                old, att = old_layer.self_attn, new_layer.self_attn
                w_k, w_v = old.k_proj.weight.float(), old.v_proj.weight.float()
                if merge == "mean":
                    att.kv_proj.weight.copy_((w_k + w_v) / 2)
                    if old.k_proj.bias is not None:
                        att.kv_proj.bias.copy_((old.k_proj.bias + old.v_proj.bias) / 2)
                    continue
                att.kv_proj.weight.copy_(w_k)
                maps = _value_maps(w_k, w_v, n_kv, head_dim, inputs[idx], ridge)
                w_o = old.o_proj.weight.double()  # (hidden, n_heads * head_dim)
                cols = w_o.view(w_o.shape[0], n_heads, head_dim)
                folded = torch.einsum("ohd,hde->ohe", cols, maps.repeat_interleave(group, dim=0))
                att.o_proj.weight.copy_(folded.reshape_as(w_o))
                if old.k_proj.bias is not None:
                    att.kv_proj.bias.copy_(old.k_proj.bias)
                    # v = N k + (b_v - N b_k): the constant part passes the softmax
                    # unchanged (weights sum to 1) and joins the output bias
                    b_k = old.k_proj.bias.double().view(n_kv, head_dim)
                    rest = old.v_proj.bias.double().view(n_kv, head_dim) - torch.einsum(
                        "hde,he->hd", maps, b_k
                    )
                    extra = torch.einsum("ohd,hd->o", cols, rest.repeat_interleave(group, dim=0))
                    if att.o_proj.bias is not None:
                        att.o_proj.bias.add_(extra.to(att.o_proj.bias.dtype))
    new.eval()
    return new
