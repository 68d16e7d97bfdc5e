"""train_lm with any optimizer and loss-aware schedulers; task models; the model list."""

import math
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from icml26_core.datasets import ByteTokenizer, dataset_info, list_datasets, load_model  # noqa: E402
from icml26_core.lm import (  # noqa: E402
    LLAMA_SIZES,
    count_parameters,
    finetune_task_models,
    tiny_llama,
    train_lm,
    trainable_names,
)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


TOKENS = np.random.default_rng(0).integers(0, 256, 4000)


class LossDamped:
    """A loss-driven schedule: lr = base / (1 + alpha * loss), stepped with the loss."""

    needs_loss = True

    def __init__(self, optimizer, alpha=1.0):
        self.optimizer, self.alpha = optimizer, alpha
        self.base = [g["lr"] for g in optimizer.param_groups]
        self.seen = []

    def step(self, loss):
        self.seen.append(loss)
        for g, b in zip(self.optimizer.param_groups, self.base, strict=True):
            g["lr"] = b / (1 + self.alpha * loss)

    def state_dict(self):
        return {"seen": list(self.seen)}

    def load_state_dict(self, state):
        self.seen = list(state["seen"])


def _run(**kw):
    args = {"steps": 4, "batch_size": 2, "seq_len": 16, "eval_every": 2, "eval_batches": 1}
    return train_lm(tiny_llama("1M", seed=1), TOKENS, TOKENS, **{**args, **kw})


def test_a_scheduler_that_needs_the_loss_gets_each_steps_loss():
    made = []

    def build(optimizer):
        made.append(LossDamped(optimizer, alpha=0.5))
        return made[-1]

    history = _run(scheduler=build, lr=1e-3)
    sched = made[0]
    assert sched.seen == pytest.approx(history.step_losses)
    assert all(isinstance(v, float) for v in sched.seen)
    assert history.lr[-1] == pytest.approx(1e-3 / (1 + 0.5 * history.step_losses[-1]))


def test_reduce_on_plateau_and_factories():
    opt_made = []

    def make_opt(model):
        opt_made.append(torch.optim.SGD(model.parameters(), lr=0.1))
        return opt_made[-1]

    def plateau(opt):
        return torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)

    history = _run(optimizer=make_opt, scheduler=plateau)
    assert len(opt_made) == 1 and history.lr[0] == pytest.approx(0.1)
    assert history.lr[-1] <= 0.1  # stepped with the loss (a plain step() would raise)


def test_plain_schedulers_still_step_without_the_loss():
    def lam(opt):
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))

    history = _run(scheduler=lam, lr=1e-3)
    assert history.lr[-1] == pytest.approx(1e-3 / 5)


def test_a_non_finite_loss_never_reaches_the_scheduler():
    made = []
    model = tiny_llama("1M")
    opt = torch.optim.SGD(model.parameters(), lr=1e8)
    history = train_lm(
        model,
        TOKENS,
        None,
        steps=30,
        batch_size=2,
        seq_len=16,
        optimizer=opt,
        scheduler=lambda o: made.append(LossDamped(o)) or made[-1],
        grad_clip=None,
    )
    assert history.diverged and not math.isfinite(history.step_losses[-1])
    assert len(made[0].seen) == len(history.step_losses) - 1
    assert all(math.isfinite(v) for v in made[0].seen)


def test_bad_optimizer_and_scheduler():
    with pytest.raises(TypeError, match="optimizer must have step"):
        _run(optimizer=object())
    with pytest.raises(TypeError, match="scheduler must have step"):
        _run(scheduler=3)


# ---- task models --------------------------------------------------------------------------

PAIRS = {
    "upper": [("cat ->", " CAT"), ("dog ->", " DOG"), ("owl ->", " OWL")],
    "reverse": [("cat ->", " tac"), ("dog ->", " god"), ("owl ->", " lwo")],
}


def test_trainable_names_top_layers():
    model = tiny_llama("1M")
    top = trainable_names(model, 1)
    assert top and all(n.startswith("model.layers.3.") for n in top)
    assert len(trainable_names(model)) == len(list(model.parameters()))
    with pytest.raises(ValueError, match="top_layers must be"):
        trainable_names(model, 5)
    with pytest.raises(ValueError, match="Llama-style"):
        trainable_names(torch.nn.Linear(2, 2), 1)


def test_task_models_train_only_what_was_asked_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_CACHE", str(tmp_path))
    base = tiny_llama("1M", seed=0)
    before = {k: v.clone() for k, v in base.state_dict().items()}
    tasks = {**PAIRS, "text": TOKENS}
    tm = finetune_task_models(
        base,
        tasks,
        tokenizer=ByteTokenizer(),
        top_layers=1,
        steps=20,
        batch_size=3,
        lr=3e-3,
        seq_len=16,
    )
    assert tm.tasks == ("upper", "reverse", "text")
    for k, v in base.state_dict().items():  # the base is untouched
        assert torch.equal(v, before[k]), k
    for task in tm.tasks:
        assert set(tm.params[task]) == set(trainable_names(base, 1))
        vec = tm.task_vector(task)
        assert max(float(v.abs().max()) for v in vec.values()) > 0
        m = tm.model(task)
        state = tm.state_dict(task)
        for k, v in m.state_dict().items():
            assert torch.equal(v, state[k]), k
            if not k.startswith("model.layers.3."):
                assert torch.equal(v, before[k]), k  # frozen outside the top layer
        losses = tm.histories[task]["step_losses"]
        assert len(losses) == 20 and np.mean(losses[-5:]) < np.mean(losses[:5])
    assert not any(tm.meta["loaded_from_cache"].values())

    from icml26_core.lm import tasks as tasks_mod

    monkeypatch.setattr(tasks_mod, "_train_pairs", lambda *a, **k: pytest.fail("retrained"))
    again = finetune_task_models(
        base,
        tasks,
        tokenizer=ByteTokenizer(),
        top_layers=1,
        steps=20,
        batch_size=3,
        lr=3e-3,
        seq_len=16,
    )
    assert all(again.meta["loaded_from_cache"].values())
    for task in tm.tasks:
        for k, v in tm.params[task].items():
            assert torch.equal(again.params[task][k], v)


def test_answer_only_loss_ignores_the_prompt():
    from icml26_core.lm.tasks import _encode_pairs, _pair_loss

    model = tiny_llama("1M", seed=0).eval()
    tok = ByteTokenizer()
    a = _encode_pairs([("aaaa", "xy")], tok, 64)
    b = _encode_pairs([("bbbb", "xy")], tok, 64)
    assert a[0][1] == 4 and len(a[0][0]) == 6
    with torch.no_grad():
        la, lb = _pair_loss(model, a, "cpu"), _pair_loss(model, b, "cpu")
        ids = torch.tensor([a[0][0]])
        logits = model(ids).logits[0, :-1]
        manual = torch.nn.functional.cross_entropy(logits[3:5], ids[0, 4:6])
    assert float(la) == pytest.approx(float(manual), rel=1e-5)
    assert float(la) != pytest.approx(float(lb))  # same answer, other context


def test_task_model_bad_input():
    base = tiny_llama("1M")
    with pytest.raises(ValueError, match="non-empty mapping"):
        finetune_task_models(base, {}, cache=False)
    with pytest.raises(TypeError, match="tokenizer"):
        finetune_task_models(base, PAIRS, cache=False)
    with pytest.raises(TypeError, match="pairs"):
        finetune_task_models(base, {"t": ["just a string"]}, tokenizer=ByteTokenizer(), cache=False)
    with pytest.raises(ValueError, match="at least one"):
        finetune_task_models(base, {"t": []}, tokenizer=ByteTokenizer(), cache=False)


# ---- the model kind of `icml26 data list` ---------------------------------------------------


def test_listed_model_sizes_match_the_models():
    from icml26_core.datasets.models import _SIZES, tiny_llama_size

    assert _SIZES == LLAMA_SIZES
    for size in LLAMA_SIZES:
        model = tiny_llama(size) if size in ("1M", "3M") else None
        body, total = tiny_llama_size(size)
        if model is not None:
            assert count_parameters(model, non_embedding=True) == body
            assert count_parameters(model) == total
        info = dataset_info("model", f"tiny_llama_{size.lower()}")
        assert f"{body:,} non-embedding" in info.shape
    names = [i.name for i in list_datasets("model")]
    assert names == [
        "smollm2_135m_instruct",
        "tiny_llama_1m",
        "tiny_llama_3m",
        "tiny_llama_10m",
        "tiny_llama_30m",
    ]
    model, tok = load_model("tiny_llama_1m", seed=3)
    assert isinstance(tok, ByteTokenizer) and count_parameters(model) == tiny_llama_size("1M")[1]
    info = dataset_info("model", "smollm2_135m_instruct")
    assert info.call == "icml26_core.lm.load_smollm2()"
    assert "cached" in info.detail() or "not converted" in info.detail()
