"""A straightforward imperative SAC update in the CleanRL style, the speed reference: nn.Module
actor and critics, torch.optim.Adam, three backward passes, in-place polyak averaging."""
import torch
import torch.nn.functional as F
from torch import nn


class Actor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden, log_std_min=-5.0, log_std_max=2.0):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, hidden[0]), nn.ReLU(),
                                 nn.Linear(hidden[0], hidden[1]), nn.ReLU())
        self.mean = nn.Linear(hidden[1], act_dim)
        self.log_std = nn.Linear(hidden[1], act_dim)
        self.bounds = (log_std_min, log_std_max)

    def sample(self, obs):
        h = self.net(obs)
        lo, hi = self.bounds
        log_std = lo + 0.5 * (hi - lo) * (torch.tanh(self.log_std(h)) + 1)
        mean, std = self.mean(h), log_std.exp()
        u = mean + std * torch.randn_like(mean)
        a = torch.tanh(u)
        log_prob = (torch.distributions.Normal(mean, std).log_prob(u)
                    - torch.log(1 - a.pow(2) + 1e-6))
        return a, log_prob.sum(-1)


def critic(obs_dim, act_dim, hidden):
    return nn.Sequential(nn.Linear(obs_dim + act_dim, hidden[0]), nn.ReLU(),
                         nn.Linear(hidden[0], hidden[1]), nn.ReLU(), nn.Linear(hidden[1], 1))


class ImperativeSAC:
    """SAC with N critics and a target min over a random M of them (REDQ's subset)."""

    def __init__(self, obs_dim, act_dim, hidden, num_critics=2, num_target_critics=2,
                 gamma=0.99, tau=0.005, device="cpu"):
        self.actor = Actor(obs_dim, act_dim, hidden).to(device)
        self.critics = nn.ModuleList(critic(obs_dim, act_dim, hidden)
                                     for _ in range(num_critics)).to(device)
        self.targets = nn.ModuleList(critic(obs_dim, act_dim, hidden)
                                     for _ in range(num_critics)).to(device)
        self.targets.load_state_dict(self.critics.state_dict())
        self.log_alpha = torch.zeros((), device=device, requires_grad=True)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=3e-4)
        self.critic_opt = torch.optim.Adam(self.critics.parameters(), lr=1e-3)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=1e-3)
        self.m, self.gamma, self.tau, self.target_entropy = num_target_critics, gamma, tau, -act_dim

    def update(self, obs, action, reward, next_obs, terminated):
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_a, next_logp = self.actor.sample(next_obs)
            x = torch.cat([next_obs, next_a], -1)
            idx = torch.randperm(len(self.targets))[: self.m]
            tq = torch.stack([self.targets[i](x).squeeze(-1) for i in idx.tolist()]).min(0).values
            target = reward + self.gamma * (1 - terminated) * (tq - alpha * next_logp)
        x = torch.cat([obs, action], -1)
        critic_loss = sum(0.5 * F.mse_loss(c(x).squeeze(-1), target) for c in self.critics)
        self.critic_opt.zero_grad()
        critic_loss.backward()
        self.critic_opt.step()
        with torch.no_grad():
            for p, tp in zip(self.critics.parameters(), self.targets.parameters()):
                tp.lerp_(p, self.tau)

        a, logp = self.actor.sample(obs)
        x = torch.cat([obs, a], -1)
        q = torch.stack([c(x).squeeze(-1) for c in self.critics]).min(0).values
        actor_loss = (alpha * logp - q).mean()
        self.actor_opt.zero_grad()
        actor_loss.backward()
        self.actor_opt.step()

        alpha_loss = -(self.log_alpha * (logp.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad()
        alpha_loss.backward()
        self.alpha_opt.step()
        return critic_loss.detach(), actor_loss.detach()
