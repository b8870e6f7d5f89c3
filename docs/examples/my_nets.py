"""Networks of your own for a training run (docs: Extending, "A network from your own file"):

    funcsac train --actor-factory my_nets.py:actor --critic-factory my_nets.py:critic ...

Each factory builds one module from the sizes funcsac passes it; the critics are copied and
stacked into the ensemble by funcsac, so ``critic`` builds one.
"""
from torch import nn


def _mlp(in_dim: int, out_dim: int, hidden_sizes) -> nn.Sequential:
    """Linear -> LayerNorm -> SiLU per hidden size, then a linear head."""
    layers, width = [], in_dim
    for size in hidden_sizes:
        layers += [nn.Linear(width, size), nn.LayerNorm(size), nn.SiLU()]
        width = size
    return nn.Sequential(*layers, nn.Linear(width, out_dim))


def actor(input_dim: int, act_dim: int, hidden_sizes) -> nn.Module:
    """obs [B, input_dim] -> [B, 2 * act_dim]: the tanh-Gaussian's mean and raw log-std."""
    return _mlp(input_dim, 2 * act_dim, hidden_sizes)


def critic(input_dim: int, act_dim: int, hidden_sizes) -> nn.Module:
    """[B, input_dim + act_dim] (observation, action) -> [B, 1]: one critic's Q."""
    return _mlp(input_dim + act_dim, 1, hidden_sizes)
