import torch

from funcsac import keys


def test_same_key_same_numbers_and_different_keys_differ():
    k = keys.make_key(3)
    assert torch.equal(keys.normal(k, (100,)), keys.normal(k, (100,)))
    assert not torch.equal(keys.normal(k, (100,)), keys.normal(keys.make_key(4), (100,)))
    a, b = keys.split(k, 2)
    assert not torch.equal(keys.uniform(a, (50,)), keys.uniform(b, (50,)))
    assert keys.split(k, 5).shape == (5, 2)


def test_distributions():
    u = keys.uniform(keys.make_key(0), (200_000,))
    assert u.min() > 0 and u.max() < 1
    assert abs(u.mean().item() - 0.5) < 0.005 and abs(u.var().item() - 1 / 12) < 0.002
    z = keys.normal(keys.make_key(1), (200_000,), torch.float64)
    assert abs(z.mean().item()) < 0.01 and abs(z.std().item() - 1) < 0.01
    assert abs((z.abs() < 1).double().mean().item() - 0.6827) < 0.005
    # consecutive draws are uncorrelated
    assert abs(torch.corrcoef(torch.stack([z[:-1], z[1:]]))[0, 1].item()) < 0.01
    r = keys.randint(keys.make_key(2), (100_000,), 7)
    counts = torch.bincount(r, minlength=7).double() / r.numel()
    assert r.min() >= 0 and r.max() < 7 and (counts - 1 / 7).abs().max() < 0.01


def test_choice_is_distinct_and_uniform():
    draws = torch.stack([keys.choice(k, 10, 2) for k in keys.split(keys.make_key(0), 4000)])
    assert (draws[:, 0] != draws[:, 1]).all()
    freq = torch.bincount(draws.flatten(), minlength=10).double() / draws.numel()
    assert (freq - 0.1).abs().max() < 0.02


def test_vmap_over_keys_equals_loop():
    ks = keys.split(keys.make_key(7), 4)
    batched = torch.func.vmap(lambda k: keys.normal(k, (3, 5)))(ks)
    assert torch.equal(batched, torch.stack([keys.normal(k, (3, 5)) for k in ks]))


def test_compiled_draws_equal_eager():
    f = lambda k: (keys.normal(k, (64,)), keys.split(k, 3))  # noqa: E731
    k = keys.make_key(11)
    eager, compiled = f(k), torch.compile(f, fullgraph=True)(k)
    torch.testing.assert_close(compiled[0], eager[0])
    assert torch.equal(compiled[1], eager[1])


def test_compiled_draws_of_symbolic_sizes_equal_eager():
    """With dynamic shapes the size enters the hash as a symbolic scalar (inductor compiles it in
    seconds)."""
    f = lambda k, x: (keys.normal(k, x.shape), keys.randint(k, x.shape, 7))  # noqa: E731
    compiled = torch.compile(f, fullgraph=True, dynamic=True)
    k = keys.make_key(12)
    for n in (6, 9):
        eager, got = f(k, torch.zeros(n, 3)), compiled(k, torch.zeros(n, 3))
        torch.testing.assert_close(got[0], eager[0])
        assert torch.equal(got[1], eager[1])


def test_streams_of_keys_one_bit_apart_are_uncorrelated():
    base = keys.make_key(5)
    z = keys.normal(base, (100_000,), torch.float64)
    for flip in ([1, 0], [0, 1], [1 << 31, 0]):
        other = keys.normal(base ^ torch.tensor(flip), (100_000,), torch.float64)
        assert abs(torch.corrcoef(torch.stack([z, other]))[0, 1].item()) < 0.01


def _inverse_box_muller(z):
    """The uniforms ``[2 * half]`` a Box-Muller draw ``z [2 * half]`` was made from."""
    x, y = z.chunk(2)
    return torch.cat([torch.exp(-0.5 * (x.square() + y.square())),
                      torch.remainder(torch.atan2(y, x) / (2 * torch.pi), 1.0)])


def _uncorrelated(a, b):
    return abs(torch.corrcoef(torch.stack([a.double(), b.double()]))[0, 1].item()) < 0.01


def test_split_of_different_sizes_gives_different_keys():
    k = keys.make_key(0)
    two, three = keys.split(k, 2), keys.split(k, 3)
    assert not (two[:, None] == three[None]).all(-1).any()


def test_uniforms_of_different_sizes_are_independent():
    k = keys.make_key(1)
    assert not (keys.uniform(k, (5,))[:, None] == keys.uniform(k, (10,))[None]).any()
    n = 200_000
    assert _uncorrelated(keys.uniform(k, (n,)), keys.uniform(k, (2 * n,))[:n])
    assert _uncorrelated(keys.normal(k, (n,)), keys.normal(k, (2 * n,))[:n])


def test_kinds_of_draw_from_one_key_are_independent():
    """Keys, uniforms, integers and normals from one key, each as the uniforms it was made of."""
    k, n = keys.make_key(2), 200_000
    draws = {"split": keys.split(k, n // 2).flatten().double() / 2 ** 32,
             "uniform": keys.uniform(k, (n,), torch.float64),
             "randint": keys.randint(k, (n,), 2 ** 32 - 1).double() / 2 ** 32,
             "normal": _inverse_box_muller(keys.normal(k, (n,), torch.float64))}
    names = list(draws)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert _uncorrelated(draws[a], draws[b]), (a, b)


def test_fold_in_differs_from_split():
    k = keys.make_key(3)
    folded = torch.stack([keys.fold_in(k, d) for d in range(4)])
    for num in (1, 2, 4):
        assert not (folded[:, None] == keys.split(k, num)[None]).all(-1).any()
    assert len({tuple(f.tolist()) for f in folded}) == 4
