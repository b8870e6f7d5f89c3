"""A straightforward imperative SAC written independently of funcsac's losses: separate nn.Module
critics in a Python loop, torch.distributions for log-probs, torch.autograd and torch.optim.Adam.
It takes funcsac's parameters and draws the same noise from the same keys, so the two can be
compared step by step."""
import copy
import math

import torch
from torch import nn
from torch.distributions import Normal, TanhTransform

import funcsac
from funcsac import keys
from funcsac.variants.bro.network import bronet
from funcsac.variants.simba.network import simba
from funcsac.variants.simbav2.network import SimbaV2Net
from helpers import reordered


def _module_with(template_factory, params):
    m = template_factory()
    m.load_state_dict({k: v.clone() for k, v in params.items()})
    return m


class ReferenceSAC:
    def __init__(self, state: funcsac.SACState):
        cfg = self.cfg = state.config
        dt = cfg.dtype
        d, a, hidden = cfg.obs_dim + cfg.state_dim, cfg.act_dim, cfg.hidden_sizes
        actor_hidden = cfg.actor_hidden_sizes or hidden
        actor_f = lambda: self.network(d, 2 * a, actor_hidden).to(dt)  # noqa: E731
        critic_f = lambda: self.critic_network(  # noqa: E731  the critics see the privileged
            d + cfg.privileged_dim + a, cfg.critic_outputs, hidden).to(dt)
        self.actor = _module_with(actor_f, state.actor)
        self.critics = [_module_with(critic_f, {k: v[i] for k, v in state.critic.items()})
                        for i in range(cfg.num_critics)]
        self.targets = [copy.deepcopy(c) for c in self.critics]
        self.log_alpha = nn.Parameter(state.log_alpha.clone())
        betas, eps = cfg.adam_betas, cfg.adam_eps
        opt = torch.optim.AdamW if cfg.weight_decay else torch.optim.Adam
        self.actor_opt = opt(self._groups([self.actor]), lr=cfg.actor_lr, betas=betas, eps=eps)
        self.critic_opt = opt(self._groups(self.critics), lr=cfg.critic_lr, betas=betas, eps=eps)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr,
                                          betas=cfg.alpha_adam_betas or betas, eps=eps)
        self.key = state.key.clone()
        self.step = 0

    def network(self, in_dim, out_dim, hidden):
        """A module of the config's network (funcsac's templates; the reference's own code is
        what trains them)."""
        return funcsac.mlp(in_dim, out_dim, hidden)

    def critic_network(self, in_dim, out_dim, hidden):
        """A critic's module (the config's network unless a reference writes its own)."""
        return self.network(in_dim, out_dim, hidden)

    def _groups(self, modules):
        """Parameter groups: weight decay on matrices only, or on all with weight_decay_on="all"."""
        params = [p for m in modules for p in m.parameters()]
        decayed = [self.cfg.weight_decay_on == "all" or p.dim() >= 2 for p in params]
        return [{"params": [p for p, d in zip(params, decayed) if d],
                 "weight_decay": self.cfg.weight_decay},
                {"params": [p for p, d in zip(params, decayed) if not d], "weight_decay": 0.0}]

    def dist(self, obs):
        cfg = self.cfg
        mean, raw = self.actor(obs[..., :cfg.obs_dim + cfg.state_dim]).chunk(2, dim=-1)
        if cfg.log_std_squash == "clip":  # SB3's and REDQ's torch.clamp
            return mean, torch.clamp(raw, cfg.log_std_min, cfg.log_std_max)
        span = cfg.log_std_max - cfg.log_std_min
        log_std = cfg.log_std_min + 0.5 * span * (torch.tanh(raw) + 1)
        return mean, log_std

    def sample(self, obs, key):
        mean, log_std = self.dist(obs)
        u = mean + log_std.exp() * keys.normal(key, mean.shape, mean.dtype)
        a = torch.tanh(u)
        log_prob = (Normal(mean, log_std.exp()).log_prob(u)
                    - TanhTransform().log_abs_det_jacobian(u, a))
        return a, log_prob.sum(-1)

    def target(self, batch: funcsac.Batch, key, alpha):
        """The critics' regression target [B] (SAC's: min over M target critics)."""
        cfg = self.cfg
        k_action, k_value = keys.split(key, 2)
        k_subset, k_dropout = keys.split(k_value, 2)
        next_obs = batch.next_obs
        with torch.no_grad():
            next_a, next_logp = self.sample(next_obs, k_action)
            idx = range(cfg.num_critics)
            if cfg.num_target_critics < cfg.num_critics:
                idx = keys.choice(k_subset, cfg.num_critics, cfg.num_target_critics).tolist()
            tq = self.q_values([self.targets[i] for i in idx],
                               torch.cat([next_obs, next_a], -1), k_dropout).min(0).values
            done = batch.terminated.to(next_obs.dtype)
            return batch.reward + cfg.gamma ** batch.horizon * (1 - done) * (tq - alpha * next_logp)

    def q_values(self, critics, x, key):
        """``[len(critics), B]``: each critic on ``x [B, D]`` (``key``: its dropout masks' key,
        unused without dropout)."""
        return torch.stack([c(x).squeeze(-1) for c in critics])

    def critic_loss(self, obs, action, target, weight):
        loss = 0
        for c in self.critics:
            q = c(torch.cat([obs, action], -1)).squeeze(-1)
            loss = loss + 0.5 * (weight * (q - target) ** 2).mean()
        return loss

    def actor_value(self, obs, a):
        """The Q [B] the actor maximises."""
        qs = torch.stack([c(torch.cat([obs, a], -1)).squeeze(-1) for c in self.critics])
        return qs.min(0).values if self.cfg.actor_q_reduction == "min" else qs.mean(0)

    def step_keys(self):
        """``(k_critic, k_actor)`` of this step (moving the key on)."""
        self.key, k_critic, k_actor = keys.split(self.key, 3)
        return k_critic, k_actor

    def split_key(self):
        """``(k_target, k_actor)`` of this step (moving the key on); the critic loss's key (its
        dropout) is ``self.k_critic``."""
        k_critic, k_actor = self.step_keys()
        k_target, self.k_critic = keys.split(k_critic, 2)
        return k_target, k_actor

    def critic_inputs(self, batch):
        """``(obs the critic loss takes, the batch the target takes)``."""
        return batch.obs, batch

    def actor_obs(self, batch, k_actor):
        """``(obs the actor loss takes, its key)``."""
        return batch.obs, k_actor

    def critic_params(self):
        return [p for c in self.critics for p in c.parameters()]

    def polyak(self):
        with torch.no_grad():
            for c, t in zip(self.critics, self.targets):
                for p, tp in zip(c.parameters(), t.parameters()):
                    tp.add_(self.cfg.tau * (p - tp))

    def update(self, batch: funcsac.Batch):
        cfg = self.cfg
        k_target, k_actor = self.split_key()
        alpha = self.log_alpha.detach().exp()
        obs, target_batch = self.critic_inputs(batch)
        target = self.view_target(self.target(target_batch, k_target, alpha))
        critic_loss = self.critic_loss(obs, target_batch.action, target, target_batch.weight)
        self.descend(self.critic_opt, critic_loss, self.critic_params())
        if self.step % cfg.target_update_every == 0:
            self.polyak()

        obs, k_actor = self.actor_obs(batch, k_actor)
        k_actor, _ = keys.split(k_actor, 2)
        a, logp = self.sample(obs, k_actor)
        actor_loss = (alpha * logp - self.actor_value(obs, a)).mean()
        alpha_loss = self.alpha_loss(logp.detach())
        if self.step % cfg.policy_delay == 0:
            self.descend(self.actor_opt, actor_loss, self.actor.parameters())
            if cfg.learn_alpha:
                self.descend(self.alpha_opt, alpha_loss)
        self.step += 1
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(),
                "alpha_loss": alpha_loss.detach(), "alpha": alpha,
                "entropy": -logp.detach().mean(), "target_q_mean": self.target_mean(target)}

    def target_mean(self, target):
        """The mean over the batch of the target's values (of its atoms' mean, for atoms)."""
        return target.mean()

    def view_target(self, target):
        """The target of each row the critic loss takes (DrQ: averaged over the views)."""
        return target

    def alpha_loss(self, logp):
        """The temperature's loss for the actor's log-probabilities ``logp [B]``."""
        return -(self.log_alpha * (logp + self.cfg.target_entropy)).mean()

    def _clip(self, params):
        if self.cfg.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, self.cfg.max_grad_norm)

    def descend(self, opt, loss, clipped=()):
        """One step of ``opt`` on ``loss``, the gradients of ``clipped`` clipped first."""
        opt.zero_grad()
        loss.backward()
        self._clip(list(clipped))
        opt.step()

    def params(self):
        """Parameters laid out as funcsac's state."""
        stack = lambda ms: {k: torch.stack([m.state_dict()[k] for m in ms])  # noqa: E731
                            for k in ms[0].state_dict()}
        return {"actor": dict(self.actor.state_dict()), "critic": stack(self.critics),
                "target_critic": stack(self.targets), "log_alpha": self.log_alpha.detach()}


class ReferenceTQC(ReferenceSAC):
    """TQC on the same machinery, written with explicit loops over critics, quantiles and atoms:
    critics with K outputs, the target critics' quantiles pooled and sorted per row with the top
    N * d dropped, a quantile Huber loss (kappa 1) at tau_k = (k + 0.5) / K."""

    def target(self, batch: funcsac.Batch, key, alpha):
        cfg, tqc = self.cfg, self.cfg.algorithm_options
        k_action, _ = keys.split(key, 2)
        with torch.no_grad():
            next_a, next_logp = self.sample(batch.next_obs, k_action)
            outs = [t(torch.cat([batch.next_obs, next_a], -1)) for t in self.targets]
            keep = cfg.num_critics * (tqc.num_quantiles - tqc.drop_quantiles)
            y = torch.empty(len(next_a), keep, dtype=next_a.dtype)
            for b in range(len(next_a)):
                pool = sorted(o[b, k].item() for o in outs for k in range(tqc.num_quantiles))
                discount = cfg.gamma ** batch.horizon[b] * (1 - float(batch.terminated[b]))
                for m in range(keep):
                    y[b, m] = batch.reward[b] + discount * (pool[m] - alpha * next_logp[b])
            return y

    def critic_loss(self, obs, action, target, weight):
        n_quantiles, n_atoms = self.cfg.algorithm_options.num_quantiles, target.shape[1]
        loss = 0
        for c in self.critics:
            z = c(torch.cat([obs, action], -1))
            per_row = 0
            for k in range(n_quantiles):
                tau = (k + 0.5) / n_quantiles
                for m in range(n_atoms):
                    u = target[:, m] - z[:, k]
                    huber = torch.where(u.abs() <= 1, 0.5 * u ** 2, u.abs() - 0.5)
                    asymmetry = torch.full_like(u, tau).masked_fill(u < 0, 1 - tau)
                    per_row = per_row + asymmetry * huber
            loss = loss + (weight * per_row / (n_quantiles * n_atoms)).mean()
        return loss

    def actor_value(self, obs, a):
        total, n_quantiles = 0, self.cfg.algorithm_options.num_quantiles
        for c in self.critics:
            z = c(torch.cat([obs, a], -1))
            for k in range(n_quantiles):
                total = total + z[:, k]
        return total / (self.cfg.num_critics * n_quantiles)


class ReferenceCategorical(ReferenceSAC):
    """SAC with categorical critics, the target's projection as SimbaV2's
    ``categorical_td_loss`` writes it (dojeon-ai/SimbaV2, C51's): each shifted bin's probability
    put on the floor and ceiling bins through one-hot masks, ``p (u + [l == u] - b)`` and
    ``p (b - l)``; per row the target distribution of the critic with the lower expected value
    (clipped double Q); the cross-entropy of each critic's log-softmax against it."""

    def bins(self):
        o = self.cfg.algorithm_options
        return torch.linspace(o.v_min, o.v_max, o.num_bins, dtype=self.cfg.dtype)

    def target(self, batch: funcsac.Batch, key, alpha):
        o, z = self.cfg.algorithm_options, self.bins()
        k = o.num_bins
        k_action, k_value = keys.split(key, 2)
        k_subset, _ = keys.split(k_value, 2)
        idx = range(self.cfg.num_critics)
        if self.cfg.num_target_critics < self.cfg.num_critics:
            idx = keys.choice(k_subset, self.cfg.num_critics, self.cfg.num_target_critics).tolist()
        with torch.no_grad():
            next_a, next_logp = self.sample(batch.next_obs, k_action)
            x = torch.cat([batch.next_obs, next_a], -1)
            log_probs = [torch.log_softmax(self.targets[i](x), -1) for i in idx]
            values = torch.stack([(lp.exp() * z).sum(-1) for lp in log_probs])
            lowest = values.argmin(0)
            target_probs = torch.stack([log_probs[lowest[b]][b].exp() for b in range(len(x))])
            discount = (self.cfg.gamma ** batch.horizon
                        * (1 - batch.terminated.to(x.dtype)))[:, None]
            shifted = batch.reward[:, None] + discount * (z[None] - alpha * next_logp[:, None])
            shifted = shifted.clamp(o.v_min, o.v_max)
            b = (shifted - o.v_min) / ((o.v_max - o.v_min) / (k - 1))
            lo, up = b.floor(), b.ceil()
            lo_mask = torch.nn.functional.one_hot(lo.reshape(-1).long(), k).reshape(-1, k, k)
            up_mask = torch.nn.functional.one_hot(up.reshape(-1).long(), k).reshape(-1, k, k)
            m_lo = (target_probs * (up + (lo == up).to(x.dtype) - b))[..., None]
            m_up = (target_probs * (b - lo))[..., None]
            return (m_lo * lo_mask + m_up * up_mask).sum(1)

    def target_mean(self, target):
        return (target * self.bins()).sum(-1).mean()

    def critic_loss(self, obs, action, target, weight):
        loss = 0
        for c in self.critics:
            log_probs = torch.log_softmax(c(torch.cat([obs, action], -1)), -1)
            loss = loss - (weight * (target * log_probs).sum(-1)).mean()
        return loss

    def actor_value(self, obs, a):
        z = self.bins()
        qs = torch.stack([(torch.softmax(c(torch.cat([obs, a], -1)), -1) * z).sum(-1)
                          for c in self.critics])
        return qs.min(0).values


def simba_actor_and_temperature(ref, batch, k_actor, value, keep=lambda: None):
    """The first half of SimBa's and SimbaV2's step on ``ref``: the actor's step against
    ``value(obs, a)`` (its parameters then as ``keep()`` keeps them), the temperature's with the
    loss ``alpha * (entropy - target)``. Returns ``(actor loss, alpha before, entropy,
    temperature loss)``."""
    alpha = ref.log_alpha.detach().exp()
    a, log_probs = ref.sample(batch.obs, keys.split(k_actor, 2)[0])
    actor_loss = (log_probs * alpha - value(batch.obs, a)).mean()
    ref.actor_opt.zero_grad()
    actor_loss.backward()
    ref.actor_opt.step()
    keep()
    for c in ref.critics:  # the actor's backward reached the critics too
        c.zero_grad()
    entropy = -log_probs.detach().mean()
    temperature_loss = ref.log_alpha.exp() * (entropy - ref.cfg.target_entropy)
    ref.alpha_opt.zero_grad()
    temperature_loss.backward()
    ref.alpha_opt.step()
    return actor_loss, alpha, entropy, temperature_loss


class ReferenceSimbaV2(ReferenceCategorical):
    """SimbaV2's update (dojeon-ai/SimbaV2 scale_rl/agents/simbaV2/simbaV2_agent.py
    _update_simbav2_networks and simbaV2_update.py) on SimbaV2's networks: the actor's step
    against the min of the critics' expected values, its weights projected back onto the sphere
    (``l2normalize_network``, each ``hyper_dense`` weight's rows), the temperature's step with
    ``alpha * (entropy - target)``, the critics' categorical step against the new actor and
    temperature, projected, the targets' average; each learning rate decayed by torch's
    ``LinearLR`` after its optimiser's step (optax's ``linear_schedule``)."""

    def __init__(self, state):
        super().__init__(state)
        cfg = self.cfg
        self.schedules = [torch.optim.lr_scheduler.LinearLR(
            opt, 1.0, cfg.lr_decay_to, cfg.lr_decay_steps)
            for opt in (self.actor_opt, self.critic_opt, self.alpha_opt)]

    def network(self, in_dim, out_dim, hidden):
        o = self.cfg.network_options
        return SimbaV2Net(in_dim, out_dim, hidden[0], len(hidden),
                                                 o.actor_heads, o.c_shift, o.scalers)

    def critic_network(self, in_dim, out_dim, hidden):
        o = self.cfg.network_options
        return SimbaV2Net(in_dim, out_dim, hidden[0], len(hidden), 1,
                                                 o.c_shift, o.scalers)

    @staticmethod
    def project(modules):
        with torch.no_grad():
            for m in modules:
                for name, p in m.named_parameters():
                    if name.endswith("hyper_dense.weight"):
                        p.div_(p.norm(dim=1, keepdim=True).clamp(min=1e-8))

    def update(self, batch: funcsac.Batch):
        k_target, k_actor = self.split_key()
        actor_loss, alpha, entropy, temperature_loss = simba_actor_and_temperature(
            self, batch, k_actor, self.actor_value, lambda: self.project([self.actor]))
        target = self.target(batch, k_target, self.log_alpha.detach().exp())
        critic_loss = self.critic_loss(batch.obs, batch.action, target, batch.weight)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        self.project(self.critics)
        self.polyak()
        for schedule in self.schedules:
            schedule.step()
        self.step += 1
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(),
                "alpha_loss": temperature_loss.detach(), "alpha": alpha, "entropy": entropy,
                "target_q_mean": self.target_mean(target)}


class ReferenceBRO(ReferenceTQC):
    """BRO as naumix/BiggerRegularizedOptimistic's jaxrl/bro writes it, on the same machinery:
    BroNet modules, the critics' quantiles combined by their mean and mean absolute deviation,
    the quantile Huber loss summed over quantiles (TQC's loops), the temperature loss
    alpha * (entropy - target), and after the actor's step the optimistic actor's step
    (torch.distributions' KL) and the optimism's and KL weight's steps, each an nn.Parameter
    with its own torch.optim."""

    LOG_MIN, LOG_MAX = -10.0, 7.5

    def __init__(self, state: funcsac.SACState):
        super().__init__(state)
        cfg, opts = self.cfg, self.cfg.algorithm_options
        d, a = cfg.obs_dim + cfg.state_dim, cfg.act_dim
        net = self.network(d + a, a, cfg.actor_hidden_sizes or cfg.hidden_sizes)
        net[-1] = nn.Linear(net[-1].in_features, a, bias=False)
        self.optimistic = _module_with(lambda: net.to(cfg.dtype), state.extra["actor"])
        opt = torch.optim.AdamW if cfg.weight_decay else torch.optim.Adam
        self.optimistic_opt = opt(self._groups([self.optimistic]), lr=cfg.actor_lr,
                                  betas=cfg.adam_betas, eps=cfg.adam_eps)
        self.adjust = {n: nn.Parameter(state.extra["adjustments"][n].clone())
                       for n in ("optimism", "kl_weight")}
        self.adjust_opts = {n: torch.optim.Adam([p], lr=opts.adjustment_lr, betas=(0.5, 0.999),
                                                eps=cfg.adam_eps) for n, p in self.adjust.items()}

    def network(self, in_dim, out_dim, hidden):
        return bronet(in_dim, out_dim, hidden)

    def value(self, name):
        """An adjustment's value: exp of its parameter squashed into [LOG_MIN, LOG_MAX]."""
        span = self.LOG_MAX - self.LOG_MIN
        return torch.exp(self.LOG_MIN + span * 0.5 * (1 + torch.tanh(self.adjust[name])))

    def combined(self, outs, pessimism):
        """[B, K]: per quantile, the critics' mean minus pessimism times their mean |deviation|."""
        mean = sum(outs) / len(outs)
        return mean - pessimism * sum((o - mean).abs() for o in outs) / len(outs)

    def target(self, batch: funcsac.Batch, key, alpha):
        cfg = self.cfg
        k_action, _ = keys.split(key, 2)
        with torch.no_grad():
            next_a, next_logp = self.sample(batch.next_obs, k_action)
            outs = [t(torch.cat([batch.next_obs, next_a], -1)) for t in self.targets]
            z = self.combined(outs, cfg.algorithm_options.pessimism)
            discount = cfg.gamma ** batch.horizon * (1 - batch.terminated.to(z.dtype))
            return batch.reward[:, None] + discount[:, None] * (z - alpha * next_logp[:, None])

    def critic_loss(self, obs, action, target, weight):
        """TQC's loss summed over the quantiles (BRO's calculate_quantile_huber_loss)."""
        n_quantiles = self.cfg.algorithm_options.num_quantiles
        return super().critic_loss(obs, action, target, weight) * n_quantiles

    def actor_value(self, obs, a):
        outs = [c(torch.cat([obs, a], -1)) for c in self.critics]
        return self.combined(outs, self.cfg.algorithm_options.pessimism).mean(-1)

    def view_target(self, target):
        """The target of each row the critic loss takes (DrQ: averaged over the views)."""
        return target

    def alpha_loss(self, logp):
        return self.log_alpha.exp() * (-logp.mean() - self.cfg.target_entropy)

    def update(self, batch: funcsac.Batch):
        self.key, self.k_extra = keys.split(self.key, 2)
        metrics = super().update(batch)
        cfg, opts = self.cfg, self.cfg.algorithm_options
        k_noise, _ = keys.split(self.k_extra, 2)
        with torch.no_grad():
            mean, log_std = self.dist(batch.obs)
        std = log_std.exp()
        noise = keys.normal(k_noise, mean.shape, mean.dtype)
        mean_o = mean + self.optimistic(torch.cat([batch.obs, mean], -1))
        std_o = std * opts.std_multiplier
        a = torch.tanh(mean_o + std_o * noise)
        optimism, kl_weight = self.value("optimism").detach(), self.value("kl_weight").detach()
        outs = [c(torch.cat([batch.obs, a], -1)) for c in self.critics]
        upper = self.combined(outs, -optimism).mean(-1)
        kl = torch.distributions.kl_divergence(
            Normal(mean_o, std_o / opts.std_multiplier), Normal(mean, std)).sum(-1).mean()
        loss = -upper.mean() + kl_weight * kl
        self.optimistic_opt.zero_grad()
        loss.backward()
        self._clip(list(self.optimistic.parameters()))
        self.optimistic_opt.step()
        excess = kl.detach() / cfg.act_dim - opts.kl_target
        for name, sign in (("optimism", 1.0), ("kl_weight", -1.0)):
            self.adjust_opts[name].zero_grad()
            shift = opts.pessimism if name == "optimism" else 0.0
            (sign * (self.value(name) - shift) * excess).backward()
            self.adjust_opts[name].step()
        return {**metrics, "optimism": optimism, "kl_weight": kl_weight,
                "kl": kl.detach() / cfg.act_dim, "optimistic_loss": loss.detach()}

    def params(self):
        return {**super().params(), "extra.actor": dict(self.optimistic.state_dict()),
                "extra.adjustments": {n: p.detach() for n, p in self.adjust.items()}}


class ReferenceDroQ(ReferenceSAC):
    """DroQ's critics as its code runs them (Linear, dropout, LayerNorm, ReLU per hidden layer;
    the dropout active in the targets, the critic loss and the actor loss), each pass's masks
    drawn from its own key: split once per critic of the pass, then once per dropout layer, a
    unit kept where a uniform draw is at least the rate and scaled by 1 / (1 - rate)."""

    def critic_network(self, in_dim, out_dim, hidden):
        layers, d = [], in_dim
        for h in hidden:  # nn.Dropout marks where q_values applies its masks
            layers += [nn.Linear(d, h), nn.Dropout(self.cfg.network_options.critic_dropout),
                       nn.LayerNorm(h), nn.ReLU()]
            d = h
        return nn.Sequential(*layers, nn.Linear(d, out_dim))

    def q_values(self, critics, x, key):
        """``[len(critics), B]``: each critic on ``x [B, D]`` with its own masks."""
        out = []
        for critic, k in zip(critics, keys.split(key, len(critics))):
            drops = [m for m in critic if isinstance(m, nn.Dropout)]
            masks = iter(keys.split(k, len(drops)))
            h = x
            for m in critic:
                if isinstance(m, nn.Dropout):
                    keep = keys.uniform(next(masks), h.shape, h.dtype) >= m.p
                    h = h * keep / (1 - m.p)
                else:
                    h = m(h)
            out.append(h.squeeze(-1))
        return torch.stack(out)

    def critic_loss(self, obs, action, target, weight):
        q = self.q_values(self.critics, torch.cat([obs, action], -1), self.k_critic)
        return sum(0.5 * (weight * (qi - target) ** 2).mean() for qi in q)

    def actor_obs(self, batch, k_actor):
        self.k_actor_dropout = keys.split(k_actor, 2)[1]
        return batch.obs, k_actor

    def actor_value(self, obs, a):
        qs = self.q_values(self.critics, torch.cat([obs, a], -1), self.k_actor_dropout)
        return qs.min(0).values if self.cfg.actor_q_reduction == "min" else qs.mean(0)


class ReferenceSimba(ReferenceSAC):
    """SimBa's update (SonyResearch/simba scale_rl/agents/sac/sac_agent.py _update_sac_networks
    and sac_update.py) ported op for op on SimBa's networks: the actor's step against the critics
    (min of the two, or the one), the temperature's on the actor's entropy with the loss
    ``alpha * (entropy - target)``, the critics' against the new actor and temperature (their
    squared errors summed over the critics, the target ``r + gamma^n (1 - terminated) (Q' -
    alpha log pi')``), then the targets' average."""

    def network(self, in_dim, out_dim, hidden):
        return simba(in_dim, out_dim, hidden)

    def q_min(self, critics, obs, a):
        return self.q_values(critics, torch.cat([obs, a], -1), None).min(0).values

    def update(self, batch: funcsac.Batch):
        cfg = self.cfg
        k_target, k_actor = self.split_key()
        actor_loss, alpha, entropy, temperature_loss = simba_actor_and_temperature(
            self, batch, k_actor, lambda obs, a: self.q_min(self.critics, obs, a))
        new_alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_actions, next_log_probs = self.sample(batch.next_obs, keys.split(k_target, 2)[0])
            next_q = self.q_min(self.targets, batch.next_obs, next_actions)
            discount = cfg.gamma ** batch.horizon * (1 - batch.terminated.to(next_q.dtype))
            target_q = batch.reward + discount * next_q - discount * new_alpha * next_log_probs
        critic_loss = sum(((c(torch.cat([batch.obs, batch.action], -1)).squeeze(-1) - target_q)
                           ** 2).mean() for c in self.critics)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        self.polyak()
        self.step += 1
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(),
                "alpha_loss": temperature_loss.detach(), "alpha": alpha, "entropy": entropy,
                "target_q_mean": target_q.mean()}


class RefBatchRenorm(nn.Module):
    """sbx's ``jax_layers.BatchRenorm`` (the CrossQ paper's layer) ported line by line, momentum
    0.99, epsilon 1e-3, r_max 3, d_max 5, warm-up 100,000 steps; in training mode (``train()``)
    it normalises with the batch's statistics and moves its running ones in place."""

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        momentum, epsilon, r_max, d_max, warmup_steps = 0.99, 1e-3, 3.0, 5.0, 100_000
        if not self.training:
            custom_mean, custom_var = self.running_mean, self.running_var
        else:
            batch_mean = x.mean(0)
            batch_var = (x ** 2).mean(0) - batch_mean ** 2
            std = torch.sqrt(batch_var + epsilon)
            ra_std = torch.sqrt(self.running_var + epsilon)
            r = torch.clip((std / ra_std).detach(), 1 / r_max, r_max)
            d = torch.clip(((batch_mean - self.running_mean) / ra_std).detach(), -d_max, d_max)
            affine_mean = batch_mean - d * torch.sqrt(batch_var) / r
            affine_var = batch_var / (r ** 2)
            is_warmed_up = float(self.steps.item() >= warmup_steps)
            custom_mean = is_warmed_up * affine_mean + (1.0 - is_warmed_up) * batch_mean
            custom_var = is_warmed_up * affine_var + (1.0 - is_warmed_up) * batch_var
            with torch.no_grad():
                self.running_mean.copy_(momentum * self.running_mean
                                        + (1.0 - momentum) * batch_mean)
                self.running_var.copy_(momentum * self.running_var + (1.0 - momentum) * batch_var)
                self.steps += 1
        return (x - custom_mean) * torch.rsqrt(custom_var + epsilon) * self.weight + self.bias


class ReferenceCrossQ(ReferenceSAC):
    """sbx's CrossQ (``sbx/crossq/crossq.py``) ported op for op: the critics (input
    renormalised, then Dense, ReLU, BatchRenorm per layer) trained on the joint batch of current
    and next pairs in training mode, the target from that pass's next values (min over the
    critics, without gradient) and the next actions of the actor in evaluation mode; every
    ``policy_delay`` steps the actor in training mode against the critics in evaluation mode, and
    the temperature on the actor's entropy. No target networks."""

    def network(self, in_dim, out_dim, hidden):
        layers, d = [RefBatchRenorm(in_dim)], in_dim
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU(), RefBatchRenorm(h)]
            d = h
        return nn.Sequential(*layers, nn.Linear(d, out_dim))

    def update(self, batch: funcsac.Batch):
        cfg = self.cfg
        k_target, k_actor = self.split_key()
        alpha = self.log_alpha.detach().exp()
        self.actor.eval()
        with torch.no_grad():
            next_a, next_logp = self.sample(batch.next_obs, k_target)
        for c in self.critics:
            c.train()
        joint = torch.cat([torch.cat([batch.obs, batch.action], -1),
                           torch.cat([batch.next_obs, next_a], -1)])
        q_values = torch.stack([c(joint).squeeze(-1) for c in self.critics])
        current_q, next_q = q_values.chunk(2, dim=1)
        next_q = next_q.min(0).values - alpha * next_logp
        done = batch.terminated.to(next_q.dtype)
        target = (batch.reward + (1 - done) * cfg.gamma ** batch.horizon * next_q).detach()
        critic_loss = 0.5 * ((target - current_q) ** 2).mean(1).sum()
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()

        due = self.step % cfg.policy_delay == 0
        kept = copy.deepcopy(self.actor.state_dict())  # not due: nothing moves
        self.actor.train()
        for c in self.critics:
            c.eval()
        a, logp = self.sample(batch.obs, keys.split(k_actor, 2)[0])
        q = torch.stack([c(torch.cat([batch.obs, a], -1)).squeeze(-1) for c in self.critics])
        actor_loss = (alpha * logp - q.min(0).values).mean()
        entropy = -logp.detach().mean()
        alpha_loss = self.log_alpha * (entropy - cfg.target_entropy)
        if due:
            self.actor_opt.zero_grad()
            actor_loss.backward()
            self.actor_opt.step()
            self.alpha_opt.zero_grad()
            alpha_loss.backward()
            self.alpha_opt.step()
        else:
            self.actor.load_state_dict(kept)
        self.step += 1
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(),
                "alpha_loss": alpha_loss.detach(), "alpha": alpha, "entropy": entropy,
                "target_q_mean": target.mean()}

    def params(self):
        return {**super().params(), "target_critic": {}}


class RefUnitBatchNorm(nn.Module):
    """FlashSAC's ``UnitBatchNorm``: ``F.batch_norm`` (running statistics updated in place in
    training mode, the variance unbiased), momentum 0.01, eps 1e-5."""

    def __init__(self, d):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.register_buffer("running_mean", torch.zeros(d))
        self.register_buffer("running_var", torch.ones(d))

    def forward(self, x, training):
        return torch.nn.functional.batch_norm(x, self.running_mean, self.running_var,
                                              self.weight, self.bias, training=training,
                                              momentum=0.01, eps=1e-5)

    def normalize(self):
        factor = self.weight.shape[-1] ** 0.5 * torch.rsqrt(
            (self.weight ** 2 + self.bias ** 2).sum(-1, keepdim=True) + 1e-8)
        self.weight.mul_(factor)
        self.bias.mul_(factor)


class RefFlashBlock(nn.Module):
    """FlashSAC's ``FlashSACBlock``: w1, norm1, relu, w2, norm2, relu, plus the residual."""

    def __init__(self, w):
        super().__init__()
        self.up, self.up_bn = nn.Linear(w, 4 * w, bias=False), RefUnitBatchNorm(4 * w)
        self.down, self.down_bn = nn.Linear(4 * w, w, bias=False), RefUnitBatchNorm(w)

    def forward(self, x, training):
        h = torch.relu(self.up_bn(self.up(x), training))
        return x + torch.relu(self.down_bn(self.down(h), training))


class RefFlashNet(nn.Module):
    """FlashSAC's ``FlashSACActor`` (``actor=True``: its ``NormalTanhPolicy`` head's mean and
    log-std rows in one weight, as funcsac's state holds them; ``unit_head``: two
    ``UnitLinear`` layers, as the code that ran FlashSAC's published results, else its later
    ``PolicyHeadLinear``) or one member of its ``FlashSACDoubleCritic``
    (``EnsembleCategoricalValue``: a unit linear layer plus a bias), with
    ``normalize_parameters`` as each layer's."""

    def __init__(self, in_dim, out_dim, hidden, actor, unit_head=True):
        super().__init__()
        w, self.actor, self.unit_head = hidden[0], actor, unit_head
        self.in_bn, self.embed = RefUnitBatchNorm(in_dim), nn.Linear(in_dim, w, bias=False)
        self.blocks = [f"block{i}" for i in range(len(hidden))]
        for name in self.blocks:
            setattr(self, name, RefFlashBlock(w))
        self.post_norm = nn.Module()
        self.post_norm.weight = nn.Parameter(torch.ones(w))
        self.head = "policy_head" if actor else "value_head"
        setattr(self, self.head, nn.Linear(w, out_dim))

    def forward(self, x, training):
        x = self.embed(self.in_bn(x, training))
        for name in self.blocks:
            x = getattr(self, name)(x, training)
        if self.actor:  # F.rms_norm (FlashSAC's UnitRMSNorm)
            x = torch.nn.functional.rms_norm(x, (x.shape[-1],), self.post_norm.weight, 1e-6)
        else:  # EnsembleUnitRMSNorm, written out
            x = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * self.post_norm.weight
        return getattr(self, self.head)(x)

    @torch.no_grad()
    def normalize(self):
        units = [self.embed] + [getattr(getattr(self, b), n) for b in self.blocks
                                for n in ("up", "down")]
        if not self.actor:
            units.append(self.value_head)
        elif self.unit_head:  # mean_w and std_w, row by row
            units.append(self.policy_head)
        for layer in units:
            layer.weight.copy_(torch.nn.functional.normalize(layer.weight, dim=-1, eps=1e-8))
        for m in self.modules():
            if isinstance(m, RefUnitBatchNorm):
                m.normalize()
        scale = self.post_norm.weight
        scale.mul_(scale.shape[-1] ** 0.5 * torch.rsqrt((scale ** 2).sum() + 1e-8))


class ReferenceFlashSAC(ReferenceCategorical):
    """FlashSAC's step (leeyngdo/FlashSAC flash_rl/agents/flashSAC/update.py, agent.py
    ``_update_networks``) with its layers as written there: every ``policy_delay`` steps the
    actor's step in training mode over ``cat(obs, next_obs)`` (the loss on the first chunk)
    against the critics in evaluation mode, then the temperature's; then the critics': next
    actions from the actor in evaluation mode, the target and online critics in training mode
    over ``cat(obs, next_obs)`` / ``cat(action, next_action)``, the min-Q critic's next log-probs
    projected with ``_compute_categorical_td_target``'s scatter-adds (here with each row's
    horizon, and the batch's weights in the mean), the cross-entropy averaged over the critics;
    ``normalize_parameters`` after each optimiser step, the targets' parameters lerped
    (``torch._foreach_lerp_``; their running statistics are those of their own training
    passes), each learning rate on FlashSAC's ``warmup_cosine_decay_scheduler`` through
    ``LambdaLR`` (no warmup)."""

    def __init__(self, state):
        super().__init__(state)
        cfg = self.cfg

        def schedule(step, peak=1.0, end=cfg.lr_decay_to, decay_steps=cfg.lr_decay_steps):
            if step < decay_steps:
                return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * step / decay_steps))
            return end

        self.schedules = [torch.optim.lr_scheduler.LambdaLR(opt, schedule)
                          for opt in (self.actor_opt, self.critic_opt, self.alpha_opt)]

    def network(self, in_dim, out_dim, hidden):
        return RefFlashNet(in_dim, out_dim, hidden, actor=True,
                           unit_head=self.cfg.network_options.policy_head == "unit")

    def critic_network(self, in_dim, out_dim, hidden):
        return RefFlashNet(in_dim, out_dim, hidden, actor=False)

    def sample_with(self, obs, noise, training):
        cfg = self.cfg
        mean, raw = self.actor(obs, training).chunk(2, dim=-1)
        log_std = cfg.log_std_min + (cfg.log_std_max - cfg.log_std_min) * 0.5 * (
            1 + torch.tanh(raw))
        u = mean + log_std.exp() * noise
        log_prob = Normal(mean, log_std.exp()).log_prob(u) - 2.0 * (
            math.log(2.0) - u - torch.nn.functional.softplus(-2.0 * u))
        return torch.tanh(u), log_prob.sum(1)

    def update(self, batch: funcsac.Batch):
        cfg, o, z = self.cfg, self.cfg.algorithm_options, self.bins()
        B, A, K = len(batch.obs), cfg.act_dim, o.num_bins
        k_target, k_actor = self.split_key()
        metrics = {}
        if self.step % cfg.policy_delay == 0:  # update_actor, then update_temperature
            alpha = self.log_alpha.detach().exp()
            obs_all = torch.cat([batch.obs, batch.next_obs])
            actions, log_probs = self.sample_with(
                obs_all, keys.normal(k_actor, (2 * B, A), cfg.dtype), training=True)
            actions, log_probs = actions.chunk(2)[0], log_probs.chunk(2)[0]
            x = torch.cat([batch.obs, actions], -1)
            qs = [(torch.softmax(c(x, False), -1) * z).sum(-1) for c in self.critics]
            actor_loss = (log_probs * alpha - torch.stack(qs).min(0).values).mean()
            self.actor_opt.zero_grad()
            actor_loss.backward()
            self.actor_opt.step()
            self.schedules[0].step()
            self.actor.normalize()
            for c in self.critics:
                c.zero_grad()
            entropy = -log_probs.detach().mean()
            temperature_loss = self.log_alpha.exp() * (entropy - cfg.target_entropy)
            self.alpha_opt.zero_grad()
            temperature_loss.backward()
            self.alpha_opt.step()
            self.schedules[2].step()
            metrics = {"actor_loss": actor_loss.detach(), "alpha_loss": temperature_loss.detach(),
                       "alpha": alpha, "entropy": entropy}
        k_action, k_subset, _ = keys.split(k_target, 3)
        targets = self.targets
        if cfg.num_target_critics < cfg.num_critics:  # REDQ's M of them
            targets = [targets[i] for i in keys.choice(k_subset, cfg.num_critics,
                                                       cfg.num_target_critics).tolist()]
        with torch.no_grad():
            next_a, next_logp = self.sample_with(
                batch.next_obs, keys.normal(k_action, (B, A), cfg.dtype), training=False)
            entropy_term = self.log_alpha.exp() * next_logp
            x_all = torch.cat([torch.cat([batch.obs, batch.action], -1),
                               torch.cat([batch.next_obs, next_a], -1)])
            lps = torch.stack([torch.log_softmax(t(x_all, True), -1) for t in targets])
            next_lps = lps.chunk(2, dim=1)[1]
            next_qs = (next_lps.exp() * z).sum(-1)
            selected = torch.gather(next_lps, 0, next_qs.argmin(0)[None, :, None].expand(
                1, -1, K))[0]
            done = batch.terminated.to(cfg.dtype).reshape(-1, 1)
            gamma = (cfg.gamma ** batch.horizon).reshape(-1, 1)
            target_bins = batch.reward.reshape(-1, 1) + gamma * (
                z.view(1, -1) - entropy_term.reshape(-1, 1)) * (1.0 - done)
            b = (target_bins.clamp(o.v_min, o.v_max) - o.v_min) / ((o.v_max - o.v_min) / (K - 1))
            lower = torch.floor(b).long()
            upper = torch.clamp(lower + 1, 0, K - 1)
            frac = b - lower.to(cfg.dtype)
            p = selected.exp()
            target = torch.zeros(B, K, dtype=cfg.dtype)
            target.scatter_add_(1, lower, p * (1.0 - frac))
            target.scatter_add_(1, upper, p * frac)
        lps = torch.stack([torch.log_softmax(c(x_all, True), -1) for c in self.critics])
        ce = -(target.unsqueeze(0) * lps.chunk(2, dim=1)[0]).sum(-1)  # [N, B]
        critic_loss = (batch.weight * ce).mean()
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        self.schedules[1].step()
        with torch.no_grad():
            for c, t in zip(self.critics, self.targets):
                c.normalize()
                torch._foreach_lerp_(list(t.parameters()), list(c.parameters()), cfg.tau)
        self.step += 1
        return {**metrics, "critic_loss": critic_loss.detach(),
                "target_q_mean": self.target_mean(target)}

    def params(self):
        """As funcsac's state, but the targets' running statistics, which FlashSAC's target
        training passes move and funcsac leaves (no output reads them), are not compared."""
        out = super().params()
        out["target_critic"] = {k: v for k, v in out["target_critic"].items()
                                if not k.endswith(("running_mean", "running_var"))}
        return out


def shifted(images, key, pad):
    """DrQ's random shift written out image by image: pad by replicating the edges, then slice
    out the original size at the offset drawn with ``key``."""
    offset = keys.randint(key, (len(images), 2), 2 * pad + 1)
    padded = torch.nn.functional.pad(images, (pad,) * 4, mode="replicate")
    h, w = images.shape[-2:]
    return torch.stack([padded[i, :, y:y + h, x:x + w]
                        for i, (y, x) in enumerate(offset.tolist())])


class ReferenceDrQ(ReferenceSAC):
    """SAC from images as DrQ trains it: one encoder module shared by the critics, in the
    critics' optimizer, a polyak-averaged target copy for the targets, the actor on its detached
    features; each pass shifts the scaled images with its own key. A dict observation's state
    vector is concatenated after the features."""

    def __init__(self, state: funcsac.SACState):
        super().__init__(state)
        cfg = self.cfg
        factory = lambda: funcsac.encoders.drq_encoder(  # noqa: E731
            cfg.image_shape, cfg.obs_dim).to(cfg.dtype)
        self.encoder = _module_with(factory, state.encoder)
        self.target_encoder = copy.deepcopy(self.encoder)
        params = self.critic_params()
        self.critic_opt = torch.optim.Adam(params, lr=cfg.critic_lr, betas=cfg.adam_betas,
                                           eps=cfg.adam_eps)

    def features(self, encoder, obs, key):
        if isinstance(obs, dict):
            return torch.cat([self.features(encoder, obs["pixels"], key), obs["state"]], -1)
        pad = self.cfg.encoder_options.image_pad
        return encoder(shifted(obs.to(self.cfg.dtype) / 255.0 - 0.5, key, pad))

    def split_key(self):
        k_critic, k_actor = self.step_keys()
        self.k_obs, self.k_next, k_step = keys.split(k_critic, 3)
        k_target, self.k_critic = keys.split(k_step, 2)
        return k_target, k_actor

    def critic_inputs(self, batch):
        """Features of ``views`` copies of every transition, each copy shifted on its own."""
        n = self.cfg.encoder_options.views
        copies = lambda x: (  # noqa: E731
            {k: torch.cat([v] * n) for k, v in x.items()} if isinstance(x, dict)
            else torch.cat([x] * n))
        batch = funcsac.Batch(*(copies(x) for x in batch))
        with torch.no_grad():
            next_obs = self.features(self.target_encoder, batch.next_obs, self.k_next)
        return (self.features(self.encoder, batch.obs, self.k_obs),
                batch._replace(next_obs=next_obs))

    def view_target(self, target):
        n = self.cfg.encoder_options.views
        return torch.cat([sum(target.chunk(n)) / n] * n)

    def actor_obs(self, batch, k_actor):
        k_obs, k_actor = keys.split(k_actor, 2)
        with torch.no_grad():
            return self.features(self.encoder, batch.obs, k_obs), k_actor

    def critic_params(self):
        return super().critic_params() + list(self.encoder.parameters())

    def polyak(self):
        super().polyak()
        with torch.no_grad():
            for p, tp in zip(self.encoder.parameters(), self.target_encoder.parameters()):
                tp.add_(self.cfg.tau * self.cfg.encoder_options.encoder_tau_scale * (p - tp))


def step_both(state: funcsac.SACState, ref: ReferenceSAC, batch: funcsac.Batch, step: int):
    """``funcsac.update`` and ``ref.update`` on ``batch``; their metrics must agree (up to
    ``reordered()``). Returns funcsac's new state."""
    state, metrics = funcsac.update(state, batch)
    for name, value in ref.update(batch).items():
        torch.testing.assert_close(metrics[name], value, **reordered(),
                                   msg=lambda m: f"step {step} {name}: {m}")
    return state


def check_steps(cfg, reference, steps: int = 5, reward_scale: float = 4.0):
    """``steps`` updates of an agent of ``cfg`` (seed 3) and of ``reference`` built from it, on
    batches with varied horizons and weights and rewards times ``reward_scale``: metrics and
    parameters equal (``step_both``, ``assert_params_match``)."""
    from helpers import make_batch, with_horizons_and_weights
    state = funcsac.init_state(cfg, seed=3)
    ref = reference(state)
    for step in range(steps):
        batch = with_horizons_and_weights(make_batch(cfg, batch_size=16, seed=step), step)
        batch = batch._replace(reward=reward_scale * batch.reward)
        state = step_both(state, ref, batch, step)
    assert_params_match(state, ref)


def assert_params_match(state: funcsac.SACState, ref: ReferenceSAC) -> None:
    """The actor, critics, targets and temperature of ``state`` are ``ref``'s (up to
    ``reordered()``)."""
    expected = ref.params()
    for field in ("actor", "critic", "target_critic"):
        for k, v in expected[field].items():
            torch.testing.assert_close(getattr(state, field)[k], v, **reordered(),
                                       msg=lambda m: f"{field}.{k}: {m}")
    torch.testing.assert_close(state.log_alpha, expected["log_alpha"], **reordered())
