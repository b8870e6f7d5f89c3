"""A straightforward imperative SAC written independently of funcsac's losses: separate nn.Module
critics in a Python loop, torch.distributions for log-probs, torch.autograd and torch.optim.Adam.
It takes funcsac's parameters and draws the same noise from the same keys, so the two can be
compared step by step."""
import copy

import torch
from torch import nn
from torch.distributions import Normal, TanhTransform

import funcsac
from funcsac import keys


def _module_with(template_factory, params):
    m = template_factory()
    m.load_state_dict({k: v.clone() for k, v in params.items()})
    return m


class ReferenceSAC:
    def __init__(self, state: funcsac.SACState):
        cfg = self.cfg = state.config
        dt = cfg.dtype
        sizes = (cfg.obs_dim, cfg.act_dim, cfg.hidden_sizes)
        actor_f = lambda: funcsac.networks.default_actor(*sizes).to(dt)  # noqa: E731
        critic_f = lambda: funcsac.networks.default_critic(  # noqa: E731
            *sizes, outputs=cfg.critic_outputs).to(dt)
        self.actor = _module_with(actor_f, state.actor)
        self.critics = [_module_with(critic_f, {k: v[i] for k, v in state.critic.items()})
                        for i in range(cfg.num_critics)]
        self.targets = [copy.deepcopy(c) for c in self.critics]
        self.log_alpha = nn.Parameter(state.log_alpha.clone())
        betas, eps = cfg.adam_betas, cfg.adam_eps
        opt = torch.optim.AdamW if cfg.weight_decay else torch.optim.Adam
        self.actor_opt = opt(self._groups([self.actor]), lr=cfg.actor_lr, betas=betas, eps=eps)
        self.critic_opt = opt(self._groups(self.critics), lr=cfg.critic_lr, betas=betas, eps=eps)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr, betas=betas, eps=eps)
        self.key = state.key.clone()
        self.step = 0

    def _groups(self, modules):
        """Parameter groups: weight decay on matrices only, or on all with weight_decay_on="all"."""
        params = [p for m in modules for p in m.parameters()]
        decayed = [self.cfg.weight_decay_on == "all" or p.dim() >= 2 for p in params]
        return [{"params": [p for p, d in zip(params, decayed) if d],
                 "weight_decay": self.cfg.weight_decay},
                {"params": [p for p, d in zip(params, decayed) if not d], "weight_decay": 0.0}]

    def dist(self, obs):
        cfg = self.cfg
        mean, raw = self.actor(obs).chunk(2, dim=-1)
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
        k_action, k_subset, _ = keys.split(key, 3)
        next_obs = batch.next_obs
        with torch.no_grad():
            next_a, next_logp = self.sample(next_obs, k_action)
            idx = range(cfg.num_critics)
            if cfg.num_target_critics < cfg.num_critics:
                idx = keys.choice(k_subset, cfg.num_critics, cfg.num_target_critics).tolist()
            tq = torch.stack([self.targets[i](torch.cat([next_obs, next_a], -1)).squeeze(-1)
                              for i in idx]).min(0).values
            done = batch.terminated.to(next_obs.dtype)
            return batch.reward + cfg.gamma ** batch.horizon * (1 - done) * (tq - alpha * next_logp)

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

    def update(self, batch: funcsac.Batch):
        cfg = self.cfg
        self.key, k_target, _, k_actor = keys.split(self.key, 4)  # (third: critic dropout)
        k_actor, _ = keys.split(k_actor, 2)
        alpha = self.log_alpha.detach().exp()
        obs, action = batch.obs, batch.action

        target = self.target(batch, k_target, alpha)
        critic_loss = self.critic_loss(obs, action, target, batch.weight)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self._clip([p for c in self.critics for p in c.parameters()])
        self.critic_opt.step()
        with torch.no_grad():
            for c, t in zip(self.critics, self.targets):
                for p, tp in zip(c.parameters(), t.parameters()):
                    tp.add_(cfg.tau * (p - tp))

        a, logp = self.sample(obs, k_actor)
        actor_loss = (alpha * logp - self.actor_value(obs, a)).mean()
        alpha_loss = -(self.log_alpha * (logp.detach() + cfg.target_entropy)).mean()
        if self.step % cfg.policy_delay == 0:
            self.actor_opt.zero_grad()
            actor_loss.backward()
            self._clip(list(self.actor.parameters()))
            self.actor_opt.step()
            if cfg.learn_alpha:
                self.alpha_opt.zero_grad()
                alpha_loss.backward()
                self.alpha_opt.step()
        self.step += 1
        return {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach(),
                "alpha_loss": alpha_loss.detach(), "alpha": alpha,
                "entropy": -logp.detach().mean(), "target_q_mean": target.mean()}

    def _clip(self, params):
        if self.cfg.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, self.cfg.max_grad_norm)

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
        cfg = self.cfg
        k_action, _ = keys.split(key, 2)
        with torch.no_grad():
            next_a, next_logp = self.sample(batch.next_obs, k_action)
            outs = [t(torch.cat([batch.next_obs, next_a], -1)) for t in self.targets]
            keep = cfg.num_critics * (cfg.num_quantiles - cfg.drop_quantiles)
            y = torch.empty(len(next_a), keep, dtype=next_a.dtype)
            for b in range(len(next_a)):
                pool = sorted(o[b, k].item() for o in outs for k in range(cfg.num_quantiles))
                discount = cfg.gamma ** batch.horizon[b] * (1 - float(batch.terminated[b]))
                for m in range(keep):
                    y[b, m] = batch.reward[b] + discount * (pool[m] - alpha * next_logp[b])
            return y

    def critic_loss(self, obs, action, target, weight):
        n_quantiles, n_atoms = self.cfg.num_quantiles, target.shape[1]
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
        total = 0
        for c in self.critics:
            z = c(torch.cat([obs, a], -1))
            for k in range(self.cfg.num_quantiles):
                total = total + z[:, k]
        return total / (self.cfg.num_critics * self.cfg.num_quantiles)
