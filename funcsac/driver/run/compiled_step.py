"""The learn stage's compiled steps, built out of the run's way.

``step_functions`` are what the learner calls for its gradient steps; ``CompiledStep`` gives the
function to call now. With the compile store holding the step (a configuration run before), it
is loaded (about two seconds). Otherwise, in the background
(``TrainConfig.compile_in_background``), a child process (``main``) builds the same step from
the run's configuration into the store while the run trains eagerly on one thread fewer (a core
for the compile), and the run switches to the compiled step at its first gradient step after the
child is done. Eager and compiled steps agree to rounding, so where a cold run switches depends
on how fast the machine compiles, and such a run is repeatable to rounding, not bitwise; a run
with the step in the store, or one that waits (``compile_in_background=False``), is bitwise
repeatable. A run shorter than the compile ends eagerly and stops the child. Where the child
cannot build the same step (a configuration naming code it cannot import, a key that differs, a
failure), the run compiles in its own process.
"""
from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, Dict, Optional, Tuple

import torch

from ...accel.compile.compiling import compile_update
from ...accel.compile.stored import artifact_path, compile_stored, kernel_threads
from ...platform.children import start_child, watch_parent
from ...registry import POLICIES, algorithm_of, variant_of
from ...state import SACConfig
from ..config import TrainConfig
from ..envs.spec import EnvSpec
from .agents import agent_specs
from .status import LOGGER
from .step_functions import example_batches, initial_state, step_functions

MISMATCH = 3  # the child's exit status when its step's store key is not the run's
CHILD = "import sys; from funcsac.driver.run.compiled_step import main; sys.exit(main(sys.argv[1]))"


def _code_modules(sac_config: SACConfig) -> list:
    """The modules outside funcsac (``__main__`` aside, which a child cannot import) that define
    the code the config chooses by name: its algorithm's losses and checks, its network's and
    encoder's functions, each one's options class, and its policy family's class: a child process
    imports them, so that what they register is there."""
    algorithm = algorithm_of(sac_config)
    network, encoder = variant_of(sac_config, "network"), variant_of(sac_config, "encoder")
    code = (*dataclasses.astuple(algorithm.losses), algorithm.check, algorithm.critic_outputs,
            network.build, network.check, encoder.build, encoder.prepare, encoder.target_rate,
            encoder.check, algorithm.options, network.options, encoder.options,
            type(POLICIES[sac_config.policy]))
    names = {getattr(x, "__module__", None) for x in code}
    return sorted(n for n in names if n and n != "__main__" and n.split(".")[0] != "funcsac")


class CompiledStep:
    """The run's step functions: ``function(name)`` is the function to call for the next gradient
    step (eager until the compiled ones are in use); ``due()`` says whether calling it will load
    or compile first.

    ``fns``: ``step_functions``'; ``args``: the state and example batches they are compiled
    for; ``background``: build them in a child process when the store lacks one (``config``,
    ``spec``: what the child builds them from; ``log``: the child's output); ``stored``: false
    for steps the store cannot hold (a data-parallel rank's, whose collectives name its process
    group): compiled in this process with ``torch.compile`` when first due."""

    def __init__(self, fns: Dict[str, Callable], args: tuple, background: bool,
                 config: TrainConfig, spec: EnvSpec, log: Path, stored: bool = True):
        self.eager, self.args, self.name = fns, args, " and ".join(fns)
        self.compiled: Optional[Dict[str, Callable]] = None
        self.child: Optional[subprocess.Popen] = None
        self.stored = stored
        paths = ({name: artifact_path(fn, args, name) for name, fn in fns.items()} if stored
                 else {})
        if background and any(p is not None and not p.exists() for p in paths.values()):
            self.child, self.log = _start_child(config, spec, paths, log), log
            self.started, self.threads = time.perf_counter(), torch.get_num_threads()
            torch.set_num_threads(max(1, self.threads - 1))  # a core for the compile

    def due(self) -> bool:
        """Whether ``function()`` loads or compiles before it returns: no compiled function is
        in use yet and none is being built, or the child building it has ended."""
        return self.compiled is None and (self.child is None or self.child.poll() is not None)

    def function(self, name: str) -> Callable:
        """The compiled step ``name`` when it is ready (loaded from the store, or compiled here
        when no child builds it or the child failed), else the eager one."""
        if self.due():
            self._compile()
        return (self.eager if self.compiled is None else self.compiled)[name]

    def _compile(self) -> None:
        if self.child is not None and self.child.returncode != 0:
            why = ("builds another step than this run's" if self.child.returncode == MISMATCH
                   else f"failed (exit status {self.child.returncode}; see {self.log})")
            warnings.warn(f"the background compile of {self.name} {why}; compiling it in this "
                          "process", stacklevel=4)
        elif self.child is not None:
            LOGGER.info(f"{self.name} compiled in the background in "
                        f"{time.perf_counter() - self.started:.1f} s; the run goes on compiled")
        self._end_child()
        self.compiled = {name: compile_stored(fn, self.args, name) if self.stored
                         else compile_update(fn) for name, fn in self.eager.items()}
        self.args = None  # the example inputs are needed no more

    def close(self) -> None:
        """Stop the child if it still builds (a run that ends eagerly)."""
        if self.child is not None and self.child.poll() is None:
            self.child.terminate()
            self.child.wait()
        self._end_child()

    def _end_child(self) -> None:
        """No child any more: the run's threads back to what they were before it."""
        if self.child is not None:
            torch.set_num_threads(self.threads)
        self.child = None


def build_request(config: TrainConfig, spec: EnvSpec, paths: Dict[str, Path]) -> dict:
    """What a child process needs to build the run's steps (plain values): the run's
    configuration, its environment's spec, the modules to import, the steps' store paths by
    their names and the threads their kernels are for (the run's, not the child's one)."""
    sac_config = config.agent_config(spec)
    return {"config": config.to_dict(), "env": spec.to_dict(),
            "paths": {name: str(path) for name, path in paths.items()},
            "modules": _code_modules(sac_config), "threads": kernel_threads()}


def requested_steps(request: dict) -> Tuple[Dict[str, Callable], tuple]:
    """The steps (``step_functions``) that ``request`` describes and the arguments they are
    compiled for, built as a run builds its own."""
    for module in request["modules"]:
        importlib.import_module(module)
    config, spec = TrainConfig.from_dict(request["config"]), EnvSpec.from_dict(request["env"])
    sac_config = config.agent_config(spec)
    agents = len(agent_specs(config.seed, config.num_seeds, config.sweep))
    return step_functions(config, agents), (initial_state(config, sac_config),
                                            example_batches(config, spec, sac_config, agents))


def _start_child(config: TrainConfig, spec: EnvSpec, paths: Dict[str, Path],
                 log: Path) -> subprocess.Popen:
    """A child process compiling the run's steps into the store at ``paths``, its output to
    ``log``."""
    request = log.with_suffix(".json")
    request.write_text(json.dumps(build_request(config, spec, paths)))
    with open(log, "w") as out:
        return start_child([sys.executable, "-c", CHILD, str(request)], stdout=out,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})


def build(request: dict) -> int:
    """The child's work: the steps of ``request``'s run compiled into the store. Returns the exit
    status: 0, or ``MISMATCH`` when a step it builds has another store key than the run's."""
    fns, args = requested_steps(request)
    if {name: str(artifact_path(fn, args, name)) for name, fn in fns.items()} \
            != request["paths"]:
        return MISMATCH
    for name, fn in fns.items():
        compile_stored(fn, args, name)
    return 0


def main(request_path: str) -> int:
    """The child process: ``build`` the request in the file ``request_path``; it ends with the
    run that started it."""
    import torch._inductor.config as inductor

    watch_parent()
    torch.set_flush_denormal(True)
    request = json.loads(Path(request_path).read_text())
    # the kernels for the run's threads (keyed so), not for the one this child works with
    inductor.cpp.threads = request["threads"]
    return build(request)
