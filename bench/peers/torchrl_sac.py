"""TorchRL's SAC as its own examples wire it: ``SACLoss`` (or ``REDQLoss`` for a random target
subset) over tensordict modules, one Adam per part, one backward of the summed losses, and a
``SoftUpdate`` of the target critics."""
import torch
from tensordict import TensorDict
from tensordict.nn import (NormalParamExtractor, ProbabilisticTensorDictModule,
                           ProbabilisticTensorDictSequential, TensorDictModule,
                           TensorDictSequential)
from torch import nn
from torchrl.data import Bounded, Unbounded
from torchrl.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from torchrl.objectives import REDQLoss, SACLoss, SoftUpdate


def make_actor_critic(obs_dim, act_dim, hidden, activation=nn.ReLU):
    """A tanh-Gaussian actor and a Q-network template, TorchRL modules over ``observation``."""
    spec = Bounded(-1.0, 1.0, (act_dim,))
    net = nn.Sequential(MLP(in_features=obs_dim, out_features=2 * act_dim, num_cells=list(hidden),
                            activation_class=activation), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"], spec=spec, distribution_class=TanhNormal,
        distribution_kwargs={"low": -1.0, "high": 1.0})
    qnet = MLP(in_features=obs_dim + act_dim, out_features=1, num_cells=list(hidden),
               activation_class=activation)
    return actor, ValueOperator(qnet, in_keys=["observation", "action"]), spec


def make_loss(obs_dim, act_dim, hidden, num_critics=2, num_target_critics=2,
              activation=nn.ReLU, gamma=0.99):
    """``SACLoss`` (``REDQLoss`` when the target min runs over a random subset of the critics)."""
    actor, qvalue, spec = make_actor_critic(obs_dim, act_dim, hidden, activation)
    if num_target_critics < num_critics:
        loss = REDQLoss(actor, qvalue, num_qvalue_nets=num_critics,
                        sub_sample_len=num_target_critics, action_spec=spec)
    else:
        loss = SACLoss(actor, qvalue, num_qvalue_nets=num_critics, action_spec=spec,
                       delay_qvalue=True)
    loss.make_value_estimator(gamma=gamma)
    return loss


def tensordict_batch(obs, action, reward, next_obs, terminated) -> TensorDict:
    """A funcsac ``Batch``'s tensors laid out as TorchRL expects them."""
    done = terminated.bool().unsqueeze(-1)
    return TensorDict({
        "observation": obs, "action": action,
        "next": {"observation": next_obs, "reward": reward.unsqueeze(-1), "done": done,
                 "terminated": done},
    }, batch_size=[obs.shape[0]])


class TorchRLSAC:
    """The full update: losses, one backward, Adam on actor/critics/temperature, soft update."""

    def __init__(self, obs_dim, act_dim, hidden, num_critics=2, num_target_critics=2,
                 tau=0.005, device="cpu"):
        self.loss = make_loss(obs_dim, act_dim, hidden, num_critics, num_target_critics).to(device)
        self.updater = SoftUpdate(self.loss, tau=tau)
        critic = list(self.loss.qvalue_network_params.flatten_keys().values())
        actor = list(self.loss.actor_network_params.flatten_keys().values())
        self.optimizers = [
            torch.optim.Adam(critic, lr=1e-3), torch.optim.Adam(actor, lr=3e-4),
            torch.optim.Adam([self.loss.log_alpha], lr=1e-3)]

    def update(self, td: TensorDict):
        out = self.loss(td)
        total = out["loss_qvalue"] + out["loss_actor"] + out["loss_alpha"]
        total.backward()
        for opt in self.optimizers:
            opt.step()
            opt.zero_grad(set_to_none=True)
        self.updater.step()
        return total.detach()


def sac_speed_loss(obs_dim=8, act_dim=4, cells=128, hidden=64):
    """``SACLoss`` over the networks of TorchRL's ``test_sac_speed`` benchmark: a tanh trunk
    (depth 3) shared by the actor head and the Q head (depth 2 each)."""
    common = TensorDictModule(MLP(num_cells=cells, in_features=obs_dim, depth=3,
                                  out_features=hidden), in_keys=["observation"],
                              out_keys=["hidden"])
    actor = ProbabilisticTensorDictSequential(
        common,
        TensorDictModule(MLP(num_cells=cells, in_features=hidden, depth=2,
                             out_features=2 * act_dim), in_keys=["hidden"], out_keys=["param"]),
        TensorDictModule(NormalParamExtractor(), in_keys=["param"], out_keys=["loc", "scale"]),
        ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                      distribution_class=TanhNormal,
                                      distribution_kwargs={"safe_tanh": False}))
    value = TensorDictSequential(common, TensorDictModule(
        MLP(in_features=hidden + act_dim, num_cells=cells, depth=2, out_features=1),
        in_keys=["hidden", "action"], out_keys=["state_action_value"]))
    return SACLoss(actor, value, action_spec=Unbounded(shape=(act_dim,)))
