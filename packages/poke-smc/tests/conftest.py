import math

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread(torch_one_thread):
    # Tiny tensors: a second intra-op thread only adds synchronization on a busy 2-core
    # machine. Restored after each test.
    yield


class TableModel:
    """A toy masked diffusion LM with known probabilities, for hand-checked Path LL.

    Vocabulary {0, 1}, mask id 2, length 3. ``p(x_i = 0 | x)`` depends only on the
    position ``i`` and on how many positions of ``x`` are revealed (``P0[c][i]``).
    """

    mask_token_id = 2
    vocab_size = 2
    P0 = ((0.9, 0.6, 0.7), (0.5, 0.8, 0.45), (0.4, 0.25, 0.3))

    def __init__(self):
        self.calls = 0

    def __call__(self, tokens):
        self.calls += 1
        c = (tokens != self.mask_token_id).sum(-1)  # (B,)
        p0 = torch.tensor(self.P0, dtype=torch.float64)[c]  # (B, L)
        probs = torch.stack([p0, 1 - p0], dim=-1)
        return probs.log().float()


@pytest.fixture
def table_model():
    return TableModel()


@pytest.fixture
def log():
    return math.log
