"""A trained agent's deterministic policy as a standalone file: a ``torch.export`` program
(``.pt2``) or an ONNX model, that maps observations to actions in the environment's bounds and
runs without funcsac."""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings
from pathlib import Path
from typing import Optional, Union

import numpy as np
import torch
from torch import nn

from ...batch import map_obs
from ...encoders import encoder_input
from ...networks import apply_encoder
from ...normalize import RunningStats, normalize_obs
from ...registry import POLICIES
from ...state import Static, static_for
from ...platform.files import writable, write_atomically
from ..envs.spec import EnvSpec, scale_action

FORMATS = ("torch-export", "onnx")
# torch.onnx's logger, which says at every export which torchvision operators it skips
ONNX_REGISTRATION_LOGGER = "torch.onnx._internal.exporter._registration"


@contextlib.contextmanager
def quiet_onnx_export():
    """Silence, for an ONNX export, what concerns packages funcsac does not use: torch.onnx's
    notes on torchvision's operators and a deprecation inside torch's own pytree code."""
    logger = logging.getLogger(ONNX_REGISTRATION_LOGGER)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning,
                                    message=r".*treespec, LeafSpec.*")
            yield
    finally:
        logger.setLevel(level)


class Policy(nn.Module):
    """One agent's deterministic policy: ``obs [B, obs_dim]`` (float32; a pixels run's:
    ``uint8 [B, C, H, W]``, through its encoder; with the state, a dict of them, ``"pixels"``,
    and ``"state" [B, state_dim]``) -> action ``[B, act_dim]`` in the environment's
    bounds and the action space's dtype (discrete actions: ``[B]``), as its policy family's
    ``act`` computes it. The actor's and the encoder's tensors are buffers in the agent's dtype,
    which the computation uses."""

    def __init__(self, static: Static, params: dict, spec: EnvSpec,
                 obs_stats: Optional[RunningStats] = None, encoder: Optional[dict] = None):
        super().__init__()
        # not a submodule: the weightless templates (on the meta device) are no part of the state
        object.__setattr__(self, "static", static)
        self.names, self.encoder_names = tuple(params), tuple(encoder or {})
        for i, tensor in enumerate(params.values()):
            self.register_buffer(f"param_{i}", tensor)
        for i, tensor in enumerate((encoder or {}).values()):
            self.register_buffer(f"encoder_{i}", tensor)
        self.normalize = obs_stats is not None
        if self.normalize:  # the running statistics, as the agent's act applies them
            self.register_buffer("obs_mean", obs_stats.mean)
            self.register_buffer("obs_var", obs_stats.var)
        self.spec, self.dtype = spec, static.config.dtype
        self.action_dtype = torch.from_numpy(np.empty(0, spec.action_dtype)).dtype

    def forward(self, obs) -> torch.Tensor:
        params = {name: getattr(self, f"param_{i}") for i, name in enumerate(self.names)}
        if isinstance(obs, dict):
            obs = {**obs, "state": _as_dtype(obs["state"], self.dtype)}
        if self.encoder_names:
            encoder = {name: getattr(self, f"encoder_{i}")
                       for i, name in enumerate(self.encoder_names)}
            obs = apply_encoder(self.static.encoder, encoder,
                                encoder_input(self.static.config, obs, dtype=self.dtype))
        obs = _as_dtype(obs, self.dtype)
        if self.normalize:
            obs = normalize_obs({"obs": RunningStats(None, self.obs_mean, self.obs_var)}, obs)
        action = POLICIES[self.static.config.policy].act(self.static, params, obs)
        return _as_dtype(scale_action(action, self.spec), self.action_dtype)


def _as_dtype(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` in ``dtype``; no conversion in the exported graph when it already is."""
    return x if x.dtype == dtype else x.to(dtype)


def policy_module(agent, agent_index: Optional[int] = None) -> Policy:
    """The deterministic policy of ``agent`` (a ``funcsac.load`` result) as a plain module on the
    CPU, giving the same actions as ``agent.act(obs)`` (a ``precision="bf16"`` agent's with
    float32 products, which every runtime takes on a CPU: within bfloat16's rounding of them).
    A run of several agents needs ``agent_index`` to pick one."""
    if agent_index is not None:
        if not -len(agent) <= agent_index < len(agent):
            raise ValueError(f"agent index {agent_index} out of range: the run has {len(agent)} "
                             "agent(s)")
        agent = agent[agent_index]
    elif len(agent) > 1:
        raise ValueError(f"this run has {len(agent)} agents; export one of them: agent[i] or "
                         "agent_index=i (--agent I on the command line)")
    state = agent.state
    on_cpu = lambda tensors: {n: t.detach().to("cpu", copy=True)  # noqa: E731
                              for n, t in tensors.items()}
    stats = state.norm.get("obs")
    if stats is not None:
        stats = RunningStats(*(t.detach().to("cpu", copy=True) for t in stats))
    static = state.static
    if static.config.precision != "fp32":
        static = static_for(dataclasses.replace(static.config, precision="fp32"))
    return Policy(static, on_cpu(state.actor), agent.spec, stats, on_cpu(state.encoder))


class _EntriesAsInputs(nn.Module):
    """A policy on dict observations taking their two entries as inputs of their own."""

    def __init__(self, policy: Policy):
        super().__init__()
        self.policy = policy

    def forward(self, pixels: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return self.policy({"pixels": pixels, "state": state})


def describe_inputs(spec: EnvSpec) -> str:
    """The exported policy's inputs, as ``"obs [B, 3] float32"``."""
    shape = spec.actor_obs_shape
    shapes = shape if isinstance(shape, dict) else {"obs": shape}
    return ", ".join(f"{name} [B, {', '.join(map(str, shape))}] "
                     f"{'uint8' if len(shape) == 3 else 'float32'}"
                     for name, shape in shapes.items())


def export_policy(agent, path: Union[str, Path], fmt: str,
                  agent_index: Optional[int] = None) -> Path:
    """Write the deterministic policy of ``agent`` to ``path`` in format ``fmt``: "torch-export"
    (load with ``torch.export.load(path).module()``) or "onnx" (input "obs", output "action");
    either takes float32 ``obs [B, obs_dim]`` (a pixels run's: ``uint8 [B, C, H, W]``; with the
    state, a dict of them, ``"pixels"``, and float32 ``"state" [B, state_dim]``, ONNX's inputs
    "pixels" and "state") for any batch size ``B``. Returns ``path``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "onnx":
        try:
            import onnx  # noqa: F401
            import onnxscript  # noqa: F401
        except ImportError as e:
            raise ValueError(f"ONNX export needs onnx and onnxscript ({e}): "
                             "pip install 'funcsac[export]'") from e
    path = writable(path)
    module = policy_module(agent, agent_index).eval()
    # a batch of 2: torch.export specialises a dimension whose example size is 1
    spec, batch = agent.spec, torch.export.Dim("batch")
    zeros = lambda shape: torch.zeros(2, *shape, dtype=torch.uint8 if len(shape) == 3  # noqa: E731
                                      else torch.float32)
    example = map_obs(zeros, spec.actor_obs_shape)
    dynamic_shapes = (map_obs(lambda _: {0: batch}, example),)
    if fmt == "torch-export":
        program = torch.export.export(module, (example,), dynamic_shapes=dynamic_shapes)
        # drop what the action does not use (the log-std head), which torch.export keeps
        program.graph_module.graph.eliminate_dead_code()
        program.graph_module.recompile()
        write_atomically(path, lambda f: torch.export.save(program, f))
    else:  # ONNX: one input per entry of a dict observation
        names = list(example) if isinstance(example, dict) else ["obs"]
        module = module if names == ["obs"] else _EntriesAsInputs(module)
        args = tuple(example[k] for k in names) if isinstance(example, dict) else (example,)
        with quiet_onnx_export():
            program = torch.onnx.export(module, args, dynamo=True,
                                        dynamic_shapes=tuple({0: batch} for _ in args),
                                        input_names=names, output_names=["action"],
                                        verbose=False)
        write_atomically(path, lambda f: f.write(program.model_proto.SerializeToString()))
    return path
