"""SimBa and BroNet networks, BRO's resets (funcsac.reset_params, --reset-every) and the simba and
bro presets."""
import dataclasses
import math

import optree
import pytest
import torch

import funcsac
from funcsac.networks import _is_plain
from helpers import (BACKENDS, TINY, assert_compiled_equals_eager, assert_states_equal,
                     crash_then_resume, make_batch, reordered, small_config)
from reference import ReferenceSimba, assert_params_match, step_both

SIMBA = small_config(network="simba", hidden_sizes=(16, 16), actor_hidden_sizes=(8,),
                     num_critics=3, normalize_obs=True, policy_delay=2)
BRONET = dataclasses.replace(SIMBA, network="bronet")
SIMBA_ORDER = dataclasses.replace(SIMBA, algorithm="simba", policy_delay=1)  # the actor first


# -- an independent forward pass, written out with plain tensor ops ----------------------------
def _linear(p, name, x):
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def _layer_norm(p, name, x):
    centred = x - x.mean(-1, keepdim=True)
    std = torch.sqrt(centred.square().mean(-1, keepdim=True) + 1e-5)
    return centred / std * p[f"{name}.weight"] + p[f"{name}.bias"]


def reference_simba(p, x, blocks):
    """Embedding; per block ``x + W2 relu(W1 LN(x))``; LN; head (module i of the Sequential
    is layer i, block layers i.0 .. i.3)."""
    x = _linear(p, "0", x)
    for i in range(1, blocks + 1):
        x = x + _linear(p, f"{i}.3", torch.relu(_linear(p, f"{i}.1", _layer_norm(p, f"{i}.0", x))))
    return _linear(p, str(blocks + 2), _layer_norm(p, str(blocks + 1), x))


def reference_bronet(p, x, blocks):
    """relu(LN(W x)); per block ``x + LN(W2 relu(LN(W1 x)))``; head."""
    x = torch.relu(_layer_norm(p, "1", _linear(p, "0", x)))
    for i in range(3, 3 + blocks):
        h = torch.relu(_layer_norm(p, f"{i}.1", _linear(p, f"{i}.0", x)))
        x = x + _layer_norm(p, f"{i}.4", _linear(p, f"{i}.3", h))
    return _linear(p, str(3 + blocks), x)


def _scrambled(params, seed):
    """Random values for every tensor (LayerNorm scales and biases included), so that a swapped or
    misplaced layer shows."""
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(v.shape, generator=g, dtype=v.dtype) * 0.3 for k, v in params.items()}


@pytest.mark.parametrize("cfg,reference,inner", [(SIMBA, reference_simba, 4),
                                                 (BRONET, reference_bronet, 1)],
                         ids=["simba", "bronet"])
def test_networks_compute_their_published_forward_pass(cfg, reference, inner):
    state = funcsac.init_state(cfg, seed=0)
    static = state.static
    assert _is_plain(static.actor) and _is_plain(static.critic)  # the cheap path runs them
    block = "1.1" if cfg.network == "simba" else "3.0"
    assert state.critic[f"{block}.weight"].shape == (3, inner * 16, 16)  # [N, out, in]
    assert state.actor[f"{block}.weight"].shape == (inner * 8, 8)
    actor, critic = _scrambled(state.actor, 1), _scrambled(state.critic, 2)
    batch = make_batch(cfg)
    mean, log_std = funcsac.apply_actor(static.actor, actor, batch.obs, -5.0, 2.0)
    out = reference(actor, batch.obs, blocks=1)
    torch.testing.assert_close(mean, out[:, :2])
    torch.testing.assert_close(log_std, -5.0 + 3.5 * (torch.tanh(out[:, 2:]) + 1.0))
    q = funcsac.apply_critics(static.critic, critic, batch.obs, batch.action)
    inputs = torch.cat([batch.obs, batch.action], -1)
    expected = torch.stack([reference({k: v[i] for k, v in critic.items()}, inputs, blocks=2)[:, 0]
                            for i in range(3)])
    torch.testing.assert_close(q, expected)
    one = {k: v[0] for k, v in critic.items()}  # the module's own forward agrees
    torch.testing.assert_close(torch.func.functional_call(static.critic, one, (inputs,))[:, 0],
                               expected[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_simba_update_equals_eager_without_recompile(backend):
    compiled = assert_compiled_equals_eager(SIMBA_ORDER, lambda i: make_batch(SIMBA, seed=i), 4,
                                            1e-4, 1e-5, backend)
    assert compiled.step.item() == 4


def _stack(*trees):
    return optree.tree_map(lambda *x: torch.stack(x), *trees, namespace="funcsac")


@pytest.mark.parametrize("cfg", [SIMBA, SIMBA_ORDER, BRONET],
                         ids=["simba", "simba-actor-first", "bronet"])
def test_vmapped_agents_equal_a_loop(cfg):
    states = [funcsac.init_state(cfg, seed=s) for s in range(3)]
    batches = [_stack(*[make_batch(cfg, seed=10 * s + i) for i in range(2)]) for s in range(3)]
    stacked, _ = torch.func.vmap(funcsac.update_many)(_stack(*states), _stack(*batches))
    for i, (state, b) in enumerate(zip(states, batches)):
        expected, _ = funcsac.update_many(state, b)
        optree.tree_map(lambda x, y: torch.testing.assert_close(x[i], y, **reordered(cfg.dtype)),
                        stacked, expected, namespace="funcsac")


# -- resets ----------------------------------------------------------------------------------
def _trained(cfg, seed, steps=3):
    state = funcsac.init_state(cfg, seed=seed)
    for i in range(steps):
        state, _ = funcsac.update(state, make_batch(cfg, seed=i))
    return state


def _differs(a, b) -> bool:
    return any(not torch.equal(x, y) for x, y in zip(optree.tree_leaves(a, namespace="funcsac"),
                                                     optree.tree_leaves(b, namespace="funcsac")))


def test_reset_draws_new_networks_from_the_state_deterministically():
    state = _trained(SIMBA, seed=0)
    new = funcsac.reset_params(state)
    assert_states_equal(funcsac.reset_params(state), new)  # a pure function of the state
    initial = funcsac.init_state(SIMBA, seed=0)
    for name in ("actor", "critic"):  # new weights: neither the trained nor the initial ones
        assert _differs(getattr(new, name), getattr(state, name))
        assert _differs(getattr(new, name), getattr(initial, name))
    assert_states_equal(new.target_critic, new.critic)
    for opt in (new.actor_opt, new.critic_opt, new.alpha_opt):
        assert opt.count.item() == 0 and not any(v.any() for v in opt.mu.values())
    assert new.log_alpha.item() == pytest.approx(math.log(SIMBA.init_alpha))
    assert_states_equal((new.step, new.hparams, new.norm), (state.step, state.hparams, state.norm))
    assert not torch.equal(new.key, state.key)
    assert _differs(funcsac.reset_params(new).actor, new.actor)  # the next reset draws anew
    funcsac.update(new, make_batch(SIMBA))  # a valid state


def test_reset_of_stacked_agents_gives_each_its_own_networks():
    agents = [_trained(BRONET, seed=s) for s in range(2)]
    stacked = funcsac.reset_params(_stack(*agents))
    assert_states_equal(stacked, _stack(*map(funcsac.reset_params, agents)))
    first, second = (optree.tree_map(lambda x: x[i], stacked, namespace="funcsac")
                     for i in range(2))
    assert _differs(first.actor, second.actor) and _differs(first.critic, second.critic)


RESETS = funcsac.TrainConfig(total_steps=400, learning_starts=100, reset_every=250,
                             eval_every=200, checkpoint_every=200, seed=3, num_seeds=2,
                             network="simba", actor_hidden_sizes=(8,),
                             **{**TINY, "hidden_sizes": (16,)})


def test_driver_resets_at_its_interval_and_resumes_exactly_across_a_reset(tmp_path, monkeypatch):
    """The checkpoint at 200 is before the reset at 250; the crash is at 400, after it."""
    resumed = crash_then_resume(RESETS, tmp_path / "crashed", monkeypatch, step=400)
    straight = funcsac.train(RESETS, tmp_path / "straight")
    assert_states_equal(resumed.state, straight.state)
    assert resumed.state.step.tolist() == [301, 301]  # updates at env steps 100 .. 400
    # the Adam counts restarted at the reset: updates at env steps 250 .. 400
    assert resumed.state.critic_opt.count.tolist() == [151, 151]
    unreset = funcsac.train(dataclasses.replace(RESETS, reset_every=0), tmp_path / "unreset")
    assert unreset.state.critic_opt.count.tolist() == [301, 301]


# -- configuration -----------------------------------------------------------------------------
@pytest.mark.parametrize("overrides,field", [
    (dict(network="resnet"), "SACConfig.network"),
    (dict(network="simba", hidden_sizes=(16, 32)), "SACConfig.hidden_sizes"),
    (dict(network="bronet", actor_hidden_sizes=(16, 8)), "SACConfig.actor_hidden_sizes"),
    (dict(network="simba", critic_dropout=0.01), "critic_dropout is an option of network 'mlp'"),
    (dict(network="bronet", critic_layer_norm=True),
     "critic_layer_norm is an option of network 'mlp'"),
    (dict(actor_hidden_sizes=(8, 0)), "SACConfig.actor_hidden_sizes"),
    (dict(reset_every=-1), "TrainConfig.reset_every"),
])
def test_bad_network_or_reset_settings_name_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        funcsac.TrainConfig(**overrides)


def test_presets_build_their_published_networks():
    for name, network, critic, actor in (("simba", "simba", (512, 512), (128,)),
                                         ("bro", "bronet", (512, 512), (256,))):
        cfg = funcsac.TrainConfig.from_dict(funcsac.presets.preset(name))
        sac = cfg.sac_config(obs_dim=17, act_dim=6)
        assert (sac.network, sac.hidden_sizes, sac.actor_hidden_sizes) == (network, critic, actor)
    assert funcsac.presets.preset("bro")["reset_at"][0] == 15_000


@pytest.mark.parametrize("name,settings", [
    # SonyResearch/simba sac_simba.yaml, policies.py, optax.adamw (no mask)
    ("simba", dict(algorithm="simba", log_std_min=-10.0, log_std_max=2.0, weight_decay_on="all",
                   target_entropy=-3.0, temperature_betas=(0.9, 0.999))),
    # naumix/BiggerRegularizedOptimistic jaxrl/bro: target entropy -act_dim / 2, temp beta1 0.5
    ("bro", dict(algorithm="bro", weight_decay_on="all", target_entropy=-3.0,
                 temperature_betas=(0.5, 0.999), log_std_min=-10.0)),
    # ikostrikov/rlpd sac_learner.py: target entropy -act_dim / 2
    ("rlpd", dict(target_entropy=-3.0, policy_delay=20)),
])
def test_presets_take_their_references_settings(name, settings):
    cfg = funcsac.TrainConfig.from_dict(funcsac.presets.preset(name)).sac_config(17, 6)
    assert {k: getattr(cfg, k) for k in settings} == settings


@pytest.mark.parametrize("num_critics", [2, 1])  # critic_use_cdq: true, false
def test_simba_update_equals_simbas_ported_step_by_step(num_critics):
    """Five updates of the simba preset's algorithm on SimBa networks (AdamW on every
    parameter) equal SimBa's update ported op for op in float64."""
    preset = {k: v for k, v in funcsac.presets.preset("simba").items() if k != "utd"}
    cfg = small_config(**{**preset, "hidden_sizes": (16, 16), "actor_hidden_sizes": (8,),
                          "num_critics": num_critics, "normalize_obs": False,
                          "dtype": torch.float64})
    state = funcsac.init_state(cfg, seed=4)
    ref = ReferenceSimba(state)
    for step in range(5):
        state = step_both(state, ref, make_batch(cfg, seed=30 + step), step)
    assert_params_match(state, ref)


def test_simba_starts_from_simbas_initialisation():
    """Orthogonal embedding and head (gain 1), He-normal block layers (a normal truncated at 2
    standard deviations, variance 2 / fan_in), zero biases."""
    cfg = small_config(network="simba", hidden_sizes=(64, 64), dtype=torch.float64)
    critic = {k: v[0] for k, v in funcsac.init_state(cfg, seed=0).critic.items()}
    embed, head = critic["0.weight"], critic["4.weight"]  # [64, in], [1, 64]
    f32 = dict(rtol=0, atol=10 * torch.finfo(torch.float32).eps)  # drawn in float32
    torch.testing.assert_close(embed.T @ embed, torch.eye(embed.shape[1], dtype=torch.float64),
                               **f32)
    torch.testing.assert_close(head @ head.T, torch.ones(1, 1, dtype=torch.float64), **f32)
    for name in ("1.1.weight", "1.3.weight", "2.1.weight", "2.3.weight"):
        w = critic[name]
        bound = 2 * math.sqrt(2.0 / w.shape[1]) / 0.87962566103423978
        assert w.abs().max() <= bound and w.std().item() == pytest.approx(
            math.sqrt(2.0 / w.shape[1]), rel=0.05), name
    assert all(critic[k].abs().max() == 0 for k in critic if k.endswith("bias")
               and not k.startswith(("1.0", "2.0", "3")))  # not the LayerNorms' shifts


@pytest.mark.slow
def test_simba_preset_learns_pendulum(tmp_path):
    """The simba preset (UTD 2, learning rates 1e-4, observation normalisation), compiled as in
    real use, with small networks (critics 64 wide with 2 blocks, actor 32 with 1) and SimBa's
    target entropy of -act_dim / 2, reach -250 within 5,000 env steps."""
    cfg = funcsac.TrainConfig.from_dict({
        **funcsac.presets.preset("simba"), "env_id": "Pendulum-v1", "total_steps": 5000,
        "learning_starts": 1000, "eval_every": 1000, "eval_episodes": 3,
        "hidden_sizes": (64, 64), "actor_hidden_sizes": (32,), "target_entropy": -0.5,
        "progress": False, "seed": 1})
    result = funcsac.train(cfg, tmp_path)
    assert max(e.return_mean for e in result.evals) >= -250, [e.return_mean for e in result.evals]
