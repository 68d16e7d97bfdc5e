"""The self-generated data path: outputs come from the task models, never from labels."""

import inspect

import numpy as np
import opic_merging as om
import torch
from icml26_core.datasets import ByteTokenizer
from icml26_core.lm import tiny_llama
from opic_merging._lm import generate


def test_fit_reads_no_labels_and_pseudo_labels_are_task_model_outputs():
    torch.set_num_threads(1)
    base = tiny_llama("1M").eval()
    tok = ByteTokenizer()
    top = [n for n, _ in base.named_parameters() if f"layers.{len(base.model.layers) - 1}." in n]
    params = dict(base.named_parameters())
    g = torch.Generator().manual_seed(0)
    tvs = {
        t: om.TaskVector({n: 0.05 * torch.randn(params[n].shape, generator=g) for n in top}, t)
        for t in ("a", "b")
    }
    assert "labels" not in inspect.signature(om.OPIC.fit).parameters
    opic = om.OPIC(
        base,
        tvs,
        tok,
        n_shots=1,
        budget=(1, 1),
        levels=("task", "layer"),
        n_pseudo=3,
        n_queries=2,
        max_new_tokens=3,
    )
    pool = {"a": ["cat", "dog", "sun", "map"], "b": ["red", "box", "car", "fig"]}
    opic.fit({"a": "Do a", "b": "Do b"}, inputs=pool)
    assert opic.n_labeled_items_ == 0
    for t, instr in (("a", "Do a"), ("b", "Do b")):
        xs = [x for x, _ in opic.pseudo_data_[t]]
        assert set(xs) <= set(pool[t])
        expect = generate(
            opic.task_model(t), tok, [f"{instr}\nInput: {x}\nOutput:" for x in xs], max_new_tokens=3
        )
        assert [y for _, y in opic.pseudo_data_[t]] == expect
    assert opic.coefficients_.shape == (2, len(opic.groups_))
    np.testing.assert_allclose(opic.coefficients_, 0.5)  # budget 1 per level: the initial point
