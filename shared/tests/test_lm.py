"""The language-model kit: named model sizes, batches, loss, training loop, checkpoints.

All with the network off (socket connects raise).
"""

import itertools
import math
import socket
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml26_core.lm import (  # noqa: E402
    LLAMA_SIZES,
    TrainHistory,
    checkpoint_dir,
    cosine_schedule,
    count_parameters,
    evaluate_loss,
    lm_loss,
    sample_batch,
    tiny_llama,
    tiny_llama_config,
    train_lm,
)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models gain nothing from intra-op threads, and lose a lot on a busy CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def shakespeare():
    """Byte tokens of the Shakespeare corpus (train, validation)."""
    from icml26_core.datasets import load_text

    corpus = load_text("shakespeare")
    return corpus.tokens("train"), corpus.tokens("validation")


def test_import_needs_no_torch_and_registers_the_smollm2_tokenizer():
    code = (
        "import sys, icml26_core.lm, icml26_core.datasets.text as t;"
        "assert 'torch' not in sys.modules, 'torch imported eagerly';"
        "assert 'smollm2' in t._TOKENIZERS"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


MISSING_EXTRA = """
import sys

sys.modules["torch"] = None  # as if not installed
sys.modules["transformers"] = None
import icml26_core.lm as lm
from icml26_core._lazy import MissingExtraError

for call in (lambda: lm.train_lm, lm.load_smollm2, lambda: lm.tiny_llama_config("1M")):
    try:
        call()
    except MissingExtraError as exc:
        assert "icml26-core[lm]" in str(exc), exc
    else:
        raise AssertionError("no MissingExtraError")
"""


def test_missing_torch_or_transformers_names_the_lm_extra():
    subprocess.run([sys.executable, "-c", MISSING_EXTRA], check=True)


# ---- models ---------------------------------------------------------------------------


def closed_form_non_embedding(hidden, layers, mlp):
    # per layer: q, k, v, o (h x h each), SwiGLU gate/up/down (3 h x mlp), two RMSNorms
    return layers * (4 * hidden * hidden + 3 * hidden * mlp + 2 * hidden) + hidden


@pytest.mark.parametrize("size", sorted(LLAMA_SIZES))
@pytest.mark.parametrize("vocab_size", [256, 49152])
def test_named_sizes_have_their_parameter_count(size, vocab_size):
    hidden, layers, _heads, mlp = LLAMA_SIZES[size]
    with torch.device("meta"):  # counts only: no memory, no init time
        from transformers import LlamaForCausalLM

        model = LlamaForCausalLM(tiny_llama_config(size, vocab_size))
    non_embedding = count_parameters(model, non_embedding=True)
    assert non_embedding == closed_form_non_embedding(hidden, layers, mlp)
    nominal = float(size.rstrip("M")) * 1e6
    assert abs(non_embedding - nominal) / nominal < 0.05
    # tied embeddings: the embedding is counted once
    assert count_parameters(model) == non_embedding + vocab_size * hidden


def test_tiny_llama_documented_counts():
    model = tiny_llama("1M", vocab_size=256)
    assert count_parameters(model, non_embedding=True) == 1_000_576
    assert count_parameters(model) == 1_033_344
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight


def test_tiny_llama_is_seeded_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a = tiny_llama("1M", seed=7)
    after = torch.rand(3)
    b = tiny_llama("1M", seed=7)
    c = tiny_llama("1M", seed=8)
    torch.testing.assert_close(before, after)
    for (name, pa), pb in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb), name
    assert not torch.equal(
        a.model.layers[0].self_attn.q_proj.weight, c.model.layers[0].self_attn.q_proj.weight
    )


def test_tiny_llama_overrides_and_bad_input():
    model = tiny_llama("1M", num_key_value_heads=2)
    assert model.config.num_key_value_heads == 2
    with pytest.raises(ValueError, match="size"):
        tiny_llama("2M")
    with pytest.raises(ValueError, match="vocab_size"):
        tiny_llama("1M", vocab_size=0)
    with pytest.raises(ValueError, match="seed"):
        tiny_llama("1M", seed=-1)


# ---- batches and loss ----------------------------------------------------------------


def test_sample_batch_windows_are_consecutive_and_seeded():
    tokens = torch.arange(1000)
    g1, g2 = torch.Generator().manual_seed(0), torch.Generator().manual_seed(0)
    batch = sample_batch(tokens, 6, 32, g1)
    assert batch.shape == (6, 33) and batch.dtype == torch.long
    assert torch.equal(batch[:, 1:] - batch[:, :-1], torch.ones(6, 32, dtype=torch.long))
    assert torch.equal(batch, sample_batch(tokens, 6, 32, g2))
    # every start is possible, including the last one
    starts = torch.cat([sample_batch(torch.arange(10), 64, 8, g1)[:, 0] for _ in range(10)])
    assert set(starts.tolist()) == {0, 1}


def test_untrained_loss_is_near_uniform_and_matches_transformers():
    model = tiny_llama("1M", vocab_size=256)
    ids = torch.randint(0, 256, (2, 65), generator=torch.Generator().manual_seed(0))
    loss = lm_loss(model, ids)
    # init std 0.02 gives logits near 0, hence about log(256) nats per token
    assert abs(loss.item() - math.log(256)) < 0.05
    ref = model(ids, labels=ids).loss  # transformers shifts the labels itself
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-5)


def test_evaluate_loss_is_the_mean_over_consecutive_windows():
    model = tiny_llama("1M", vocab_size=256)
    tokens = np.random.default_rng(0).integers(0, 256, 3 * 16 + 5).astype(np.int32)
    copy = tokens.copy()
    got = evaluate_loss(model, tokens, batch_size=2, seq_len=16)
    ids = torch.as_tensor(tokens, dtype=torch.long)
    with torch.no_grad():
        want = np.mean([lm_loss(model, ids[i * 16 : i * 16 + 17][None]).item() for i in range(3)])
    assert got == pytest.approx(want, rel=1e-5)
    np.testing.assert_array_equal(tokens, copy)
    assert model.training  # mode restored


@pytest.mark.parametrize(
    ("tokens", "error", "match"),
    [
        (np.zeros(100, dtype=np.float32), TypeError, "integer"),
        (np.zeros((10, 10), dtype=np.int64), ValueError, "1-D"),
        (np.zeros(10, dtype=np.int64), ValueError, "seq_len"),
        (np.full(100, 256, dtype=np.int64), ValueError, r"\[0, 256\)"),
        (np.full(100, -1, dtype=np.int64), ValueError, r"\[0, 256\)"),
        ([1, 2, 3], TypeError, "numpy array"),
    ],
)
def test_bad_tokens_are_rejected(tokens, error, match):
    model = tiny_llama("1M")
    with pytest.raises(error, match=match):
        evaluate_loss(model, tokens, seq_len=16)
    with pytest.raises(error, match=match):
        train_lm(model, tokens, steps=1, seq_len=16)


def test_bad_training_arguments_are_rejected():
    model = tiny_llama("1M")
    tokens = np.zeros(100, dtype=np.int64)
    for kwargs, match in [
        ({"steps": 0}, "steps"),
        ({"steps": 1, "batch_size": 0}, "batch_size"),
        ({"steps": 1, "grad_clip": 0.0}, "grad_clip"),
        ({"steps": 1, "resume": True}, "checkpoint_dir"),
    ]:
        with pytest.raises(ValueError, match=match):
            train_lm(model, tokens, seq_len=16, **kwargs)


def test_cosine_schedule_warms_up_then_decays_to_the_floor():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2.0)
    sched = cosine_schedule(opt, warmup_steps=4, total_steps=20, min_lr_ratio=0.1)
    lrs = []
    for _ in range(25):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[:4] == pytest.approx([0.5, 1.0, 1.5, 2.0])
    assert all(a >= b for a, b in itertools.pairwise(lrs[3:]))
    assert lrs[20:] == pytest.approx([0.2] * 5)
    with pytest.raises(ValueError, match="warmup_steps"):
        cosine_schedule(opt, warmup_steps=30, total_steps=20)


# ---- training ------------------------------------------------------------------------


def test_training_a_1m_model_on_shakespeare_lowers_validation_loss(shakespeare):
    train, val = shakespeare
    train_copy = train[:1000].copy()
    model = tiny_llama("1M", vocab_size=256, seed=0)
    history = train_lm(
        model,
        train,
        val,
        steps=40,
        batch_size=8,
        seq_len=64,
        lr=3e-3,
        eval_every=20,
        eval_batches=4,
        seed=0,
    )
    assert isinstance(history, TrainHistory)
    assert history.step == [0, 20, 40]
    assert history.tokens_seen == [0, 20 * 8 * 64, 40 * 8 * 64]
    assert len(history.step_losses) == 40 and not history.diverged
    assert history.val_loss[0] == pytest.approx(math.log(256), abs=0.1)
    # byte-level English: below uniform by a wide margin after 40 steps
    assert history.val_loss[-1] < history.val_loss[0] - 1.0
    assert history.val_perplexity[-1] == pytest.approx(math.exp(history.val_loss[-1]))
    assert history.wall_time[0] == 0.0  # exact: the clock starts at step 0
    assert history.wall_time == sorted(history.wall_time)
    assert math.isnan(history.train_loss[0]) and history.train_loss[-1] < history.train_loss[1]
    np.testing.assert_array_equal(train[:1000], train_copy)


def test_training_is_reproducible_and_closure_mode_agrees(shakespeare):
    train, _ = shakespeare
    runs = []
    for closure in (False, True, False):
        model = tiny_llama("1M", seed=1)
        train_lm(model, train, steps=3, batch_size=4, seq_len=32, seed=5, closure=closure)
        runs.append(model.state_dict())
    for key in runs[0]:
        assert torch.equal(runs[0][key], runs[2][key]), key
        torch.testing.assert_close(runs[0][key], runs[1][key])


def test_custom_optimizer_and_scheduler_are_used(shakespeare):
    train, val = shakespeare
    model = tiny_llama("1M")
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    sched = cosine_schedule(opt, warmup_steps=2, total_steps=6)
    history = train_lm(
        model,
        train,
        val,
        steps=6,
        batch_size=4,
        seq_len=32,
        optimizer=opt,
        scheduler=sched,
        eval_every=3,
        eval_batches=1,
    )
    assert history.lr[0] == pytest.approx(0.25)  # first warm-up step
    assert history.lr[-1] == pytest.approx(0.05)  # cosine floor, 0.1 x peak
    assert history.step == [0, 3, 6]


def test_checkpoint_resume_gives_the_same_model_as_one_run(shakespeare, tmp_path, monkeypatch):
    train, val = shakespeare
    args = {"batch_size": 4, "seq_len": 32, "eval_every": 2, "eval_batches": 1, "seed": 3}

    straight = tiny_llama("1M", seed=2)
    full = train_lm(straight, train, val, steps=4, **args)

    folder = tmp_path / "run"
    first = tiny_llama("1M", seed=2)
    train_lm(first, train, val, steps=2, checkpoint_dir=folder, **args)
    resumed = tiny_llama("1M", seed=2)  # fresh weights, replaced by the checkpoint
    history = train_lm(resumed, train, val, steps=4, checkpoint_dir=folder, resume=True, **args)

    assert history.step == full.step
    assert history.step_losses == pytest.approx(full.step_losses)
    for key, value in straight.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[key], value, msg=key)

    monkeypatch.setenv("ICML26_CACHE", str(tmp_path / "cache"))
    assert checkpoint_dir("run") == tmp_path / "cache" / "lm" / "checkpoints" / "run"
    with pytest.raises(ValueError, match="name"):
        checkpoint_dir("../escape")


def test_a_diverging_run_stops_and_says_so():
    model = tiny_llama("1M")
    tokens = np.random.default_rng(0).integers(0, 256, 5000)
    opt = torch.optim.SGD(model.parameters(), lr=1e8)
    descriptions = []

    def progress(iterable, description):
        descriptions.append(description)
        return iterable

    history = train_lm(
        model,
        tokens,
        tokens,
        steps=50,
        batch_size=2,
        seq_len=16,
        optimizer=opt,
        grad_clip=None,
        eval_every=25,
        eval_batches=1,
        progress=progress,
    )
    assert history.diverged and descriptions == ["training"]
    assert not math.isfinite(history.step_losses[-1]) and len(history.step_losses) < 50
    assert history.step[-1] == len(history.step_losses)
