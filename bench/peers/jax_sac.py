"""The JAX reference: funcsac's update written in JAX, flax and optax, jitted (the jaxrl/sbx style).

Same math as ``funcsac.update``: a critic step on ``r + gamma (1 - terminated) (min over a random
M of the N target critics - alpha log pi)``, polyak averaging of the targets, an actor step against
the new critics (min over all of them), a temperature step on the actor's detached log-probs; ReLU
MLPs, the actor's log-std squashed into [-5, 2] with a tanh, Adam. Needs the ``bench`` extra
(sbx brings jax, flax and optax).
"""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class MLP(nn.Module):
    hidden: tuple
    out: int

    @nn.compact
    def __call__(self, x):
        for h in self.hidden:
            x = nn.relu(nn.Dense(h)(x))
        return nn.Dense(self.out)(x)


class Critics(nn.Module):
    """N critics, parameters stacked along a leading axis (``nn.vmap``)."""

    hidden: tuple
    num: int

    @nn.compact
    def __call__(self, obs, action):
        ensemble = nn.vmap(MLP, variable_axes={"params": 0}, split_rngs={"params": True},
                           in_axes=None, out_axes=0, axis_size=self.num)
        return ensemble(self.hidden, 1)(jnp.concatenate([obs, action], -1)).squeeze(-1)


def _sample(actor, params, obs, key):
    mean, raw = jnp.split(actor.apply(params, obs), 2, axis=-1)
    log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (jnp.tanh(raw) + 1.0)
    std = jnp.exp(log_std)
    u = mean + std * jax.random.normal(key, mean.shape)
    log_prob = (-0.5 * ((u - mean) / std) ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi)
                - 2.0 * (jnp.log(2.0) - u - jax.nn.softplus(-2.0 * u)))
    return jnp.tanh(u), log_prob.sum(-1)


class JaxSAC:
    """``update(batch)`` advances the agent one jitted SAC step; the agent stays on the device."""

    def __init__(self, obs_dim, act_dim, hidden, num_critics=2, num_target_critics=2, seed=0,
                 gamma=0.99, tau=0.005):
        self.actor = MLP(tuple(hidden), 2 * act_dim)
        self.critics = Critics(tuple(hidden), num_critics)
        k_actor, k_critic, self.key = jax.random.split(jax.random.PRNGKey(seed), 3)
        obs, act = jnp.zeros((1, obs_dim)), jnp.zeros((1, act_dim))
        actor_params = self.actor.init(k_actor, obs)
        critic_params = self.critics.init(k_critic, obs, act)
        self.tx = {"actor": optax.adam(3e-4), "critic": optax.adam(1e-3),
                   "alpha": optax.adam(1e-3)}
        log_alpha = jnp.zeros(())
        self.agent = {"actor": actor_params, "critic": critic_params,
                      "target": critic_params, "log_alpha": log_alpha,
                      "opt": {"actor": self.tx["actor"].init(actor_params),
                              "critic": self.tx["critic"].init(critic_params),
                              "alpha": self.tx["alpha"].init(log_alpha)}}
        self.m, self.n, self.gamma, self.tau = num_target_critics, num_critics, gamma, tau
        self.target_entropy = -float(act_dim)
        self._step = jax.jit(self._update)

    def update(self, obs, action, reward, next_obs, terminated):
        """One step; waits for the result (JAX dispatches asynchronously)."""
        self.key, key = jax.random.split(self.key)
        self.agent, info = self._step(self.agent, (obs, action, reward, next_obs, terminated),
                                      key)
        return jax.block_until_ready(info)

    def _update(self, agent, batch, key):
        obs, action, reward, next_obs, terminated = batch
        k_next, k_subset, k_actor = jax.random.split(key, 3)
        alpha = jnp.exp(agent["log_alpha"])
        opt = dict(agent["opt"])

        next_action, next_log_prob = _sample(self.actor, agent["actor"], next_obs, k_next)
        subset = jax.random.choice(k_subset, self.n, (self.m,), replace=False)
        target_q = self.critics.apply(agent["target"], next_obs, next_action)[subset].min(0)
        target = reward + self.gamma * (1.0 - terminated) * (target_q - alpha * next_log_prob)

        def critic_loss(params):
            q = self.critics.apply(params, obs, action)
            return 0.5 * ((q - target) ** 2).mean(-1).sum()

        grads = jax.grad(critic_loss)(agent["critic"])
        updates, opt["critic"] = self.tx["critic"].update(grads, opt["critic"])
        critic = optax.apply_updates(agent["critic"], updates)
        target_params = optax.incremental_update(critic, agent["target"], self.tau)

        def actor_loss(params):
            a, log_prob = _sample(self.actor, params, obs, k_actor)
            q = self.critics.apply(critic, obs, a).min(0)
            return (alpha * log_prob - q).mean(), log_prob

        grads, log_prob = jax.grad(actor_loss, has_aux=True)(agent["actor"])
        updates, opt["actor"] = self.tx["actor"].update(grads, opt["actor"])
        actor = optax.apply_updates(agent["actor"], updates)

        def alpha_loss(log_alpha):
            return -log_alpha * jax.lax.stop_gradient(log_prob + self.target_entropy).mean()

        grad = jax.grad(alpha_loss)(agent["log_alpha"])
        updates, opt["alpha"] = self.tx["alpha"].update(grad, opt["alpha"])
        log_alpha = optax.apply_updates(agent["log_alpha"], updates)
        new = {"actor": actor, "critic": critic, "target": target_params,
               "log_alpha": log_alpha, "opt": opt}
        return new, {"entropy": -log_prob.mean()}


def numpy_batch(obs, action, reward, next_obs, terminated):
    """A funcsac ``Batch`` (torch tensors) as JAX arrays on the default device."""
    return tuple(jnp.asarray(np.asarray(x.cpu(), dtype=np.float32))
                 for x in (obs, action, reward, next_obs, terminated))
