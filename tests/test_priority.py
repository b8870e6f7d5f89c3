import numpy as np
import pytest
import torch

from funcsac import keys
from funcsac.driver.replay.priority import PriorityTree, importance_weights

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))]


def random_sets(tree, rng, rounds, max_k, reference=None):
    """``rounds`` calls of ``tree.set`` with 1..max_k random indices (repeats likely) and random
    priorities (some zero); ``reference`` (numpy) gets the same writes, last occurrence winning."""
    for _ in range(rounds):
        k = int(rng.integers(1, max_k + 1))
        index = rng.integers(0, tree.capacity, size=k)
        priority = rng.random(k) * (rng.random(k) > 0.1)
        tree.set(torch.from_numpy(index).to(tree.device), torch.from_numpy(priority))
        if reference is not None:
            for i, p in zip(index, priority):
                reference[i] = p


@pytest.mark.parametrize("capacity,fanout,top", [(1000, 8, 4), (300, 2, 1), (77, 128, 1),
                                                 (5000, 3, 1024)])
def test_every_node_is_the_sum_of_its_children(capacity, fanout, top):
    tree = PriorityTree(capacity, "cpu", fanout, top)
    reference = np.zeros(capacity)
    random_sets(tree, np.random.default_rng(0), 40, 2 * capacity, reference)
    assert np.array_equal(tree.leaves.numpy(), reference)
    assert np.all(tree.levels[0][capacity:].numpy() == 0)
    for child, parent in zip(tree.levels, tree.levels[1:]):
        sums = child.numpy().reshape(-1, fanout).sum(-1)
        np.testing.assert_allclose(parent.numpy(), sums, rtol=1e-13, atol=0)
    # the levels stop at the first of at most ``top`` nodes
    assert [x.numel() > top for x in tree.levels] == [True] * (len(tree.levels) - 1) + [False]
    # two orders of a sum of n non-negative terms differ by at most 2 n eps of the sum
    np.testing.assert_allclose(tree.total.item(), reference.sum(),
                               rtol=2 * capacity * np.finfo(np.float64).eps)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("top", [1, 3, 1024])  # descents of 2, 1 and 0 levels below the top
def test_draws_follow_the_priorities(device, top):
    priority = torch.tensor([0.0, 1.0, 2.0, 3.0, 0.0, 5.0, 8.0, 13.0, 0.5, 0.0])
    tree = PriorityTree(10, device, fanout=4, top=top)
    tree.set(torch.arange(10, device=device), priority.to(device))
    n = 200_000
    index, probability = tree.sample(keys.make_key(0, device), n)
    assert index.dtype == torch.int64 and probability.dtype == torch.float64
    assert index.device.type == probability.device.type == torch.device(device).type
    assert torch.equal(probability, tree.leaves[index] / tree.total)
    counts = torch.bincount(index.cpu(), minlength=10).double()
    assert counts[priority == 0].sum() == 0
    expected = n * priority[priority > 0].double() / priority.sum()
    chi2 = ((counts[priority > 0] - expected) ** 2 / expected).sum().item()
    assert chi2 < 22.458  # chi-square critical value, 6 degrees of freedom, p = 0.001


@pytest.mark.parametrize("n", [1, 7, 10, 1000])
def test_draw_i_lies_in_stratum_i(n):
    capacity = 1000
    tree = PriorityTree(capacity, "cpu", fanout=16, top=4)
    tree.load(torch.ones(capacity))
    index, _ = tree.sample(keys.make_key(n), n)
    i = torch.arange(n)
    assert torch.all(index >= i * capacity // n)
    assert torch.all(index < -(-(i + 1) * capacity // n))  # ceil((i + 1) * capacity / n)
    if n == capacity:
        assert torch.equal(index, i)


@pytest.mark.parametrize("fanout,top", [(2, 1), (4, 1), (2, 3), (4, 1024)])
def test_bracket_edges_never_pick_a_zero_leaf(monkeypatch, fanout, top):
    # U = 0 and U = 1 (which rounding can reach) put u at the ends of the brackets
    tree = PriorityTree(6, "cpu", fanout, top)
    tree.set(torch.arange(6), torch.tensor([0.0, 1.0, 0.0, 2.0, 0.0, 0.0]))
    for edge, leaves in ((0.0, [1, 3, 3]), (1.0, [3, 3, 3])):  # u = 0, 1, 2 or u = 1, 2, 3
        monkeypatch.setattr(keys, "uniform", lambda key, shape, dtype: torch.full(shape, edge))
        assert tree.sample(keys.make_key(0), 3)[0].tolist() == leaves


def test_level_sizes_and_small_trees():
    sizes = lambda *args: [x.numel() for x in PriorityTree(*args).levels]  # noqa: E731
    assert sizes(10, "cpu", 4, 1) == [16, 4, 1]
    assert sizes(16, "cpu", 4, 1) == [16, 4, 1]
    assert sizes(17, "cpu", 4, 1) == [64, 16, 4, 1]
    assert sizes(17, "cpu", 4, 2) == [32, 8, 2]
    assert sizes(5, "cpu", 2, 1) == [8, 4, 2, 1]
    assert sizes(1000, "cpu") == [1000]
    assert sizes(1_000_000, "cpu") == [1_000_448, 31_264, 977]
    one = PriorityTree(1, "cpu", 128, top=1)
    assert sizes(1, "cpu", 128, 1) == [1] and one.leaves.shape == (1,)
    one.set(torch.tensor([0]), torch.tensor([0.25]))
    index, probability = one.sample(keys.make_key(0), 5)
    assert torch.equal(index, torch.zeros(5, dtype=torch.int64))
    assert torch.equal(probability, torch.ones(5, dtype=torch.float64))
    binary = PriorityTree(5, "cpu", 2, top=1)
    binary.set(torch.arange(5), torch.tensor([1.0, 0.0, 2.0, 0.0, 1.0]))
    assert binary.total.item() == 4.0
    index, _ = binary.sample(keys.make_key(1), 4)
    assert index.tolist() == [0, 2, 2, 4]  # strata [0, 1), [1, 2), [2, 3), [3, 4)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="capacity"):
        PriorityTree(0, "cpu")
    with pytest.raises(ValueError, match="fanout"):
        PriorityTree(10, "cpu", fanout=1)
    with pytest.raises(ValueError, match="top"):
        PriorityTree(10, "cpu", top=0)
    tree = PriorityTree(10, "cpu", 4)
    with pytest.raises(ValueError, match="all 0"):
        tree.sample(keys.make_key(0), 3)
    tree.set(torch.tensor([3]), torch.tensor([1.0]))
    tree.set(torch.tensor([3]), torch.tensor([0.0]))
    with pytest.raises(ValueError, match="all 0"):
        tree.sample(keys.make_key(0), 3)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite and >= 0"):
            tree.set(torch.tensor([1, 2]), torch.tensor([1.0, bad]))
    for index in (-1, 10):
        with pytest.raises(ValueError, match=r"\[0, 10\)"):
            tree.set(torch.tensor([index]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="shapes"):
        tree.set(torch.tensor([1, 2]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="shape"):
        tree.load(torch.ones(9))
    tree.set(torch.zeros(0, dtype=torch.int64), torch.zeros(0))  # nothing to write
    assert tree.total.item() == 0.0  # the rejected calls changed nothing


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fanout", [3, 32])
def test_load_rebuilds_the_same_tree(device, fanout):
    tree = PriorityTree(5000, device, fanout)
    random_sets(tree, np.random.default_rng(1), 60, 300)
    tree.set(torch.tensor([17], device=device), torch.tensor([0.3]))  # a single-leaf set too
    rebuilt = PriorityTree(5000, device, fanout)
    rebuilt.load(tree.leaves.clone())
    for a, b in zip(tree.levels, rebuilt.levels):
        assert torch.equal(a, b)
    key = keys.make_key(2, device)
    for x, y in zip(tree.sample(key, 256), rebuilt.sample(key, 256)):
        assert torch.equal(x, y)


def test_repeated_index_takes_the_last_priority():
    tree = PriorityTree(20, "cpu", 4)
    tree.set(torch.tensor([2, 5, 2, 2, 5, 9]), torch.tensor([1.0, 2.0, 3.0, 4.0, 7.0, 0.5]))
    assert tree.leaves[[2, 5, 9]].tolist() == [4.0, 7.0, 0.5] and tree.total.item() == 11.5
    rng = np.random.default_rng(3)
    index, priority = rng.integers(0, 20, 5000), rng.random(5000)
    tree.set(torch.from_numpy(index), torch.from_numpy(priority))
    last = {int(i): p for i, p in zip(index, priority)}
    assert tree.leaves[list(last)].tolist() == list(last.values())


def test_importance_weights_by_hand():
    p = torch.tensor([0.1, 0.2, 0.4, 0.3], dtype=torch.float64)
    # size * p = [1, 2, 4, 3]; weight (size * p) ** -beta, divided by the largest (that of 1)
    table = {0.0: [1.0, 1.0, 1.0, 1.0],
             0.5: [1.0, 0.7071067811865476, 0.5, 0.5773502691896258],
             1.0: [1.0, 0.5, 0.25, 0.3333333333333333]}
    for beta, expected in table.items():
        for b in (beta, torch.tensor(beta)):
            w = importance_weights(p, 10, b)
            assert w.dtype == torch.float64
            torch.testing.assert_close(w, torch.tensor(expected, dtype=torch.float64))
    # the largest weight is 1 whichever draw it belongs to; float32 probabilities are accepted
    w = importance_weights(torch.tensor([0.5, 0.25]), 4, 1.0)
    torch.testing.assert_close(w, torch.tensor([0.5, 1.0], dtype=torch.float64))
