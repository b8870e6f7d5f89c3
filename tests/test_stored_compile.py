"""Compiled functions kept on disk: same numbers as eager, loaded by a new process, keyed by
everything that shapes the compiled code (user code included), refusing inputs they were not
compiled for, and loading only files this user's store signed, from a private directory."""
import dataclasses
import hashlib
import hmac
import os
import pickle
import stat
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
import torch.utils._pytree as pytree

import funcsac
from funcsac.driver.run.agents import stack, vmap_agents
import torch.utils._cxx_pytree as cxx_pytree
from funcsac.accel.compile.store import _load, store_dir, store_key
from funcsac.accel.compile.arguments import _output_structure, _with_static
from funcsac.accel.compile.stored import artifact_key, compile_stored
from helpers import TINY, eval_rows, make_batch, small_config

# the store serves one torch release (STORE_TORCH); another compiles with torch.compile
pytestmark = pytest.mark.skipif(funcsac.accel.compile.stored._other_torch() is not None,
                                reason="the compile store is written for torch "
                                f"{funcsac.accel.compile.stored.STORE_TORCH}")

CFG = small_config(policy_delay=2)


def _two_agents():
    state = stack([funcsac.init_state(CFG, seed=s) for s in (0, 1)])
    batch = stack([make_batch(CFG, seed=s) for s in (0, 1)])
    return state, batch


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The update of two vmapped agents, compiled into a fresh store."""
    store = tmp_path_factory.mktemp("store")
    state, batch = _two_agents()
    fn = compile_stored(vmap_agents(funcsac.update, 2), (state, batch), "test-agents", store)
    return fn, store


def _leaves(tree):
    return [x for x in pytree.tree_leaves(tree) if isinstance(x, torch.Tensor)]


def test_stored_update_equals_eager_step_after_step(stored):
    """Three steps: the outputs of one call (whatever their strides) feed the next."""
    fn, _ = stored
    assert not fn.loaded
    state, batch = _two_agents()
    eager = compiled = state
    for _ in range(3):
        eager, eager_metrics = vmap_agents(funcsac.update, 2)(eager, batch)
        compiled, metrics = fn(compiled, batch)
    assert compiled.config == CFG
    for x, y in zip(_leaves((compiled, metrics)), _leaves((eager, eager_metrics))):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_0d_float64_inputs_are_stored_and_give_eagers_numbers(tmp_path, recwarn):
    """The return's running statistics (0-d float64 tensors, as a float64 agent's
    hyperparameters, which an ahead-of-time compile cannot take as they are) go in as [1]: the
    batch a stored ``prepare`` normalises with them (the first part of every update) is
    eager's."""
    from funcsac.normalize import observe
    from funcsac.updates import prepare
    cfg = small_config(scale_rewards=True, return_bound=0.5, normalize_obs=True)
    state, batch = funcsac.init_state(cfg, seed=0), make_batch(cfg, seed=1)
    returns = torch.linspace(-3.0, 2.0, 8, dtype=torch.float64)
    state = observe(state, torch.randn(8, cfg.obs_dim), returns, torch.ones(8, dtype=bool))
    assert any(x.dim() == 0 and x.dtype == torch.float64 for x in _leaves(state.norm))
    fn = compile_stored(prepare, (state, batch), "test-float64", tmp_path)
    assert isinstance(fn, funcsac.accel.compile.stored.StoredFunction), [str(w.message)
                                                                         for w in recwarn]
    for x, y in zip(_leaves(fn(state, batch)), _leaves(prepare(state, batch))):
        assert x.shape == y.shape and x.dtype == y.dtype
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_a_new_process_loads_the_stored_update_and_gets_the_same_numbers(stored, tmp_path):
    """Whatever the update's build folder holds now: the stored file restores its library; and
    whatever pytree types the new process registered before funcsac's: the output's classes are
    not found by their position among them."""
    fn, store = stored
    state, batch = _two_agents()
    here = fn(*fn(state, batch)[:1], batch)
    libraries = list(store.glob(".test-agents-*/*.so"))
    assert libraries
    for library in libraries:  # a new file: this process has the library mapped
        library.unlink()
        library.write_bytes(b"not the compiled library")
    script = textwrap.dedent(f"""
        import collections, sys, time, torch
        import torch.utils._pytree
        Pair = collections.namedtuple("Pair", "a b")
        torch.utils._pytree.register_pytree_node(Pair, lambda p: (list(p), None),
                                                 lambda xs, _: Pair(*xs))
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import funcsac
        from funcsac.driver.run.agents import vmap_agents
        from test_stored_compile import _two_agents
        state, batch = _two_agents()
        start = time.perf_counter()
        fn = funcsac.compile_stored(vmap_agents(funcsac.update, 2), (state, batch),
                                    "test-agents", {str(store)!r})
        assert fn.loaded
        print(f"stored update loaded in {{time.perf_counter() - start:.2f}} s")
        state, metrics = fn(fn(state, batch)[0], batch)
        assert type(state) is funcsac.SACState, type(state)
        assert type(state.actor_opt) is funcsac.AdamState, type(state.actor_opt)
        torch.save((state.critic, state.actor_opt.nu, metrics), {str(tmp_path / "out.pt")!r})
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    there = torch.load(tmp_path / "out.pt")
    assert pytree.tree_structure(there) == pytree.tree_structure(
        (here[0].critic, here[0].actor_opt.nu, here[1]))
    for x, y in zip(_leaves(there), _leaves((here[0].critic, here[0].actor_opt.nu, here[1]))):
        assert torch.equal(x, y)


def test_inputs_it_was_not_compiled_for_are_refused(stored):
    fn, _ = stored
    state, batch = _two_agents()
    smaller = pytree.tree_map(lambda x: x[:, :16], batch)
    with pytest.raises(ValueError, match="compiled for inputs leaf .*expected.*32"):
        fn(state, smaller)
    with pytest.raises(ValueError, match="compiled for inputs leaf .*int64"):
        fn(state.replace(step=state.step.double()), batch)


class _WrappedCritic(torch.nn.Module):
    """A critic that is no plain ``Sequential``: applied by ``functional_call`` on a thread's
    copy of its template."""

    def __init__(self, obs_dim, act_dim, hidden_sizes):
        super().__init__()
        self.net = funcsac.mlp(obs_dim + act_dim, 1, hidden_sizes)

    def forward(self, x):
        return self.net(x)


def test_the_output_structure_is_found_where_no_template_was_copied_yet():
    """A background compile's first use of a template comes under fake tensors: the thread's
    copy of it is made outside them (it raised an AssertionError on the meta weights)."""
    cfg = dataclasses.replace(CFG, critic_factory=_WrappedCritic)
    state, batch = funcsac.init_state(cfg), make_batch(cfg)
    found = {}
    thread = threading.Thread(target=lambda: found.update(
        structure=_output_structure(funcsac.update, (state, batch))))
    thread.start()
    thread.join()
    eager = _with_static(funcsac.update(state, batch), None)
    assert found["structure"] == cxx_pytree.tree_structure(eager)


def _doubled_critic_loss(*args):
    loss, out = funcsac.critic_loss(*args)
    return 2 * loss, out


def _halved_critic_loss(*args):
    loss, out = funcsac.critic_loss(*args)
    return loss / 2, out


def test_the_key_holds_structure_and_code_but_not_initial_hyperparameter_values(monkeypatch):
    state, batch = funcsac.init_state(CFG), make_batch(CFG)

    def key(fn=funcsac.update, name="update", **changes):
        cfg = dataclasses.replace(CFG, **changes)
        return artifact_key(fn, (funcsac.init_state(cfg), make_batch(cfg)), name)

    assert key() == artifact_key(funcsac.update, (state, batch), "update")
    assert key(critic_lr=3e-4, gamma=0.9, tau=0.01, init_alpha=0.1, target_entropy=-3.0) == key()
    for structural in (dict(policy_delay=3), dict(hidden_sizes=(8, 8)), dict(log_std_min=-4.0),
                       dict(max_grad_norm=1.0), dict(dtype=torch.float64)):
        assert key(**structural) != key(), structural
    assert key(name="update_many") != key()
    assert artifact_key(funcsac.update, (state, make_batch(CFG, batch_size=64)), "update") != key()
    assert key(fn=funcsac.update_with_aux) != key()
    # network factories by their code: the same code in another function object, or other code
    relu = lambda o, a, h: funcsac.mlp(o, 2 * a, h)  # noqa: E731
    assert key(actor_factory=relu) == key(actor_factory=lambda o, a, h: funcsac.mlp(o, 2 * a, h))
    assert key(actor_factory=relu) != key(actor_factory=lambda o, a, h: funcsac.mlp(
        o, 2 * a, h, activation=torch.nn.Tanh))
    # the losses a registered algorithm's name stands for
    monkeypatch.setitem(funcsac.ALGORITHMS, "variant", funcsac.Losses(critic=_doubled_critic_loss))
    doubled = key(algorithm="variant")
    monkeypatch.setitem(funcsac.ALGORITHMS, "variant", funcsac.Losses(critic=_halved_critic_loss))
    assert key(algorithm="variant") not in (doubled, key())


def _critic_loss(state, batch):
    """The registered algorithm's critic loss on ``batch`` with its rewards as targets (a
    forward pass only: a quick compile that still takes the loss)."""
    loss, _ = funcsac.losses_for(state.config).critic(state.critic, state, batch, batch.reward,
                                                      state.key)
    return loss


def test_a_changed_loss_of_a_registered_algorithm_is_compiled_again(tmp_path, monkeypatch):
    """The same algorithm name and function, other losses: the function is compiled again and
    computes the new loss; each version stays in the store (a new process finds the same key:
    tests/test_fingerprint.py)."""
    monkeypatch.setitem(funcsac.ALGORITHMS, "variant", funcsac.Losses(critic=_doubled_critic_loss))
    cfg = small_config(algorithm="variant")
    state, batch = funcsac.init_state(cfg), make_batch(cfg)
    doubled = compile_stored(_critic_loss, (state, batch), "critic_loss", tmp_path)
    torch.testing.assert_close(doubled(state, batch), _critic_loss(state, batch))
    monkeypatch.setitem(funcsac.ALGORITHMS, "variant", funcsac.Losses(critic=_halved_critic_loss))
    halved = compile_stored(_critic_loss, (state, batch), "critic_loss", tmp_path)
    assert not doubled.loaded and not halved.loaded
    eager = _critic_loss(state, batch)
    torch.testing.assert_close(halved(state, batch), eager)
    monkeypatch.setitem(funcsac.ALGORITHMS, "variant", funcsac.Losses(critic=_doubled_critic_loss))
    again = compile_stored(_critic_loss, (state, batch), "critic_loss", tmp_path)
    assert again.loaded
    torch.testing.assert_close(again(state, batch), 4 * eager)


def _double(x):
    return x * 2


def test_a_compiled_run_and_a_later_one_loading_the_update_train_alike(tmp_path, monkeypatch):
    """With UTD 2 and a policy delay of 2, the driver's step is update_many's block of critic
    steps and one actor step; the first run waits for its compile."""
    from funcsac.driver.run import compiled_step
    made = []
    monkeypatch.setattr(compiled_step, "compile_stored",
                        lambda *a, **k: made.append(compile_stored(*a, **k)) or made[-1])
    cfg = funcsac.TrainConfig(**{**TINY, "compile": True, "compile_in_background": False},
                              env_id="Pendulum-v1", utd=2,
                              policy_delay=2, total_steps=300, learning_starts=200,
                              eval_every=150, seed=3)
    funcsac.train(cfg, tmp_path / "first")
    funcsac.train(cfg, tmp_path / "second")
    assert [f.loaded for f in made] == [False, True]
    assert eval_rows(tmp_path / "first") == eval_rows(tmp_path / "second")


class _Planted:
    """Unpickled, it creates the file ``marker``."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def test_a_damaged_or_planted_file_runs_nothing_and_is_compiled_again(tmp_path):
    """A file at an artifact's path that this store did not sign (damaged, or a pickle planted
    unsigned or signed with another key) is removed unread; the last one met by
    ``compile_stored``, which compiles again."""
    x, store, marker = torch.arange(4.0), tmp_path / "store", tmp_path / "planted-code-ran"
    assert not compile_stored(_double, (x,), "double", store).loaded
    (path,) = store.glob("double-*.pt2")
    payload = pickle.dumps(_Planted(str(marker)))
    for damage in (b"not a compiled function", payload,
                   hmac.new(os.urandom(32), payload, hashlib.sha256).digest() + payload):
        path.write_bytes(damage)
        with pytest.warns(UserWarning, match="not signed with this store's key.*removed"):
            assert _load(path, store_key(store)) is None
        assert not marker.exists() and not path.exists()
    path.write_bytes(damage)
    with pytest.warns(UserWarning, match="not signed with this store's key.*removed"):
        again = compile_stored(_double, (x,), "double", store)
    assert not marker.exists()
    assert not again.loaded and torch.equal(again(x), x * 2)
    assert compile_stored(_double, (x,), "double", store).loaded


def _refused(store, match, fn=_double):
    """``fn`` (doubling its input) compiled with ``store`` refused, with a warning matching
    ``match``: nothing is written to the store, and the compiled function computes."""
    x = torch.arange(4.0)
    before = sorted(store.iterdir())
    with pytest.warns(UserWarning, match="double compiled without the store: .*" + match):
        compiled = compile_stored(fn, (x,), "double", store)
    assert sorted(store.iterdir()) == before
    assert not hasattr(compiled, "loaded")
    assert torch.equal(compiled(x), x * 2)


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_store_others_may_write_to_is_refused(tmp_path, mode):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(mode)
    _refused(store, f"mode {mode:o}")


def test_a_store_of_another_user_is_refused(tmp_path, monkeypatch):
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    with monkeypatch.context() as m:  # this process as another user, so the store is not ours
        m.setattr(os, "geteuid", lambda: os.stat(store).st_uid + 1)
        _refused(store, "belongs to user")
    store_key(store)
    fstat = os.fstat
    with monkeypatch.context() as m:  # its key file as another user's
        m.setattr(os, "fstat", lambda fd: os.stat_result(
            (*fstat(fd)[:4], fstat(fd).st_uid + 1, *fstat(fd)[5:])))
        _refused(store, "key .* belongs to user")


def test_a_key_others_may_read_is_refused(tmp_path):
    store = tmp_path / "store"
    store_key(store)
    (store / "key").chmod(0o640)
    _refused(store, "key .* mode 640")


def test_the_default_store_is_private_to_the_user(tmp_path, monkeypatch):
    monkeypatch.delenv("FUNCSAC_COMPILE_STORE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert store_dir() == tmp_path / "cache/funcsac/compile"
    key = store_key(store_dir())
    assert len(key) == 32 and store_key(store_dir()) == key
    assert stat.S_IMODE(os.stat(store_dir()).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(store_dir() / "key").st_mode) == 0o600
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store_dir() == tmp_path / "home/.cache/funcsac/compile"


def test_code_that_cannot_be_fingerprinted_is_compiled_without_the_store(tmp_path):
    lock = threading.Lock()

    def double_with_a_lock(x, unused=lock):
        return x * 2

    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    _refused(store, r"_thread.lock object .* \(reached through .*double_with_a_lock\)",
             double_with_a_lock)


def test_tune_trials_keep_to_their_machines_private_store(monkeypatch):
    """Ray starts without pointing the compile store (or inductor's cache) at shared storage."""
    ray = pytest.importorskip("ray")
    from funcsac.driver.tools import tune
    calls = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs))
    tune._init_ray(None)
    assert "runtime_env" not in calls[0]


def test_the_store_drops_what_is_old_or_beyond_its_size_and_stale_build_folders(tmp_path):
    """Functions unused for max_age_s go, then the least recently used beyond max_bytes (never
    the one just saved); build folders left for a day go unless they are the newest of a
    function still stored."""
    now, day = 1e9, 86400.0

    def entry(name, age_days, size=0, folders=()):
        path = tmp_path / f"{name}.pt2"
        path.write_bytes(b"x" * size)
        os.utime(path, (now - age_days * day,) * 2)
        for suffix, folder_age in folders:
            folder = tmp_path / f".{name}-{suffix}"
            folder.mkdir()
            os.utime(folder, (now - folder_age * day,) * 2)
        return path

    old = entry("update-old", 31, folders=[("a", 31)])
    big = entry("update-big", 2, size=60)
    entry("update-kept", 1, size=50, folders=[("new", 5), ("stale", 6)])
    just = entry("update-just", 40, size=10)
    (tmp_path / ".update-gone-x").mkdir()  # a stopped compile's, from 3 days ago
    os.utime(tmp_path / ".update-gone-x", (now - 3 * day,) * 2)
    (tmp_path / ".update-running-y").mkdir()  # a compile under way
    os.utime(tmp_path / ".update-running-y", (now - 0.1 * day,) * 2)
    for name, age in (("update-x.pt2.abc.tmp", 2), ("update-y.pt2.def.tmp", 0.1)):
        (tmp_path / name).write_bytes(b"half")  # a killed writer's; one being written
        os.utime(tmp_path / name, (now - age * day,) * 2)
    removed = funcsac.accel.compile.store.prune_store(tmp_path, keep=just, now=now, max_bytes=100)
    assert set(removed) == {old, big, tmp_path / ".update-old-a", tmp_path / ".update-kept-stale",
                            tmp_path / ".update-gone-x", tmp_path / "update-x.pt2.abc.tmp"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".update-kept-new", ".update-running-y", "update-just.pt2", "update-kept.pt2",
        "update-y.pt2.def.tmp"]
