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
        critic_f = lambda: funcsac.networks.default_critic(*sizes).to(dt)  # noqa: E731
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
        log_std = cfg.log_std_min + 0.5 * (cfg.log_std_max - cfg.log_std_min) * (torch.tanh(raw) + 1)
        return mean, log_std

    def sample(self, obs, key):
        mean, log_std = self.dist(obs)
        u = mean + log_std.exp() * keys.normal(key, mean.shape, mean.dtype)
        a = torch.tanh(u)
        log_prob = Normal(mean, log_std.exp()).log_prob(u) - TanhTransform().log_abs_det_jacobian(u, a)
        return a, log_prob.sum(-1)

    def update(self, batch: funcsac.Batch):
        cfg = self.cfg
        self.key, k_target, _, k_actor = keys.split(self.key, 4)  # (third: critic dropout)
        k_action, k_subset, _ = keys.split(k_target, 3)
        k_actor, _ = keys.split(k_actor, 2)
        alpha = self.log_alpha.detach().exp()
        obs, action, reward, next_obs = batch.obs, batch.action, batch.reward, batch.next_obs
        done = batch.terminated.to(obs.dtype)

        with torch.no_grad():
            next_a, next_logp = self.sample(next_obs, k_action)
            idx = range(cfg.num_critics)
            if cfg.num_target_critics < cfg.num_critics:
                idx = keys.choice(k_subset, cfg.num_critics, cfg.num_target_critics).tolist()
            tq = torch.stack([self.targets[i](torch.cat([next_obs, next_a], -1)).squeeze(-1)
                              for i in idx]).min(0).values
            target = reward + cfg.gamma ** batch.horizon * (1 - done) * (tq - alpha * next_logp)
        critic_loss = 0
        for c in self.critics:
            q = c(torch.cat([obs, action], -1)).squeeze(-1)
            critic_loss = critic_loss + 0.5 * (batch.weight * (q - target) ** 2).mean()
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self._clip([p for c in self.critics for p in c.parameters()])
        self.critic_opt.step()
        with torch.no_grad():
            for c, t in zip(self.critics, self.targets):
                for p, tp in zip(c.parameters(), t.parameters()):
                    tp.add_(cfg.tau * (p - tp))

        a, logp = self.sample(obs, k_actor)
        qs = torch.stack([c(torch.cat([obs, a], -1)).squeeze(-1) for c in self.critics])
        q = qs.min(0).values if cfg.actor_q_reduction == "min" else qs.mean(0)
        actor_loss = (alpha * logp - q).mean()
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
                "entropy": -logp.detach().mean()}

    def _clip(self, params):
        if self.cfg.max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(params, self.cfg.max_grad_norm)

    def params(self):
        """Parameters laid out as funcsac's state."""
        stack = lambda ms: {k: torch.stack([m.state_dict()[k] for m in ms])  # noqa: E731
                            for k in ms[0].state_dict()}
        return {"actor": dict(self.actor.state_dict()), "critic": stack(self.critics),
                "target_critic": stack(self.targets), "log_alpha": self.log_alpha.detach()}
