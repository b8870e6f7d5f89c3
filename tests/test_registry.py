"""The registry: the core's imports form no circle, the base code names no variant, and a variant
defined here (not in funcsac) runs through update, train, load and export."""
import ast
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import funcsac
from funcsac import keys
from funcsac.driver.tools.export import policy_module
from funcsac.losses import policy_loss, soft_target
from helpers import TINY, make_batch, small_config

PACKAGE = Path(funcsac.__file__).parent
# the driver and the command line build on the core; everything else is the core
CORE = sorted(p for p in PACKAGE.rglob("*.py")
              if p.relative_to(PACKAGE).parts[0] not in ("driver", "cli.py", "__main__.py"))


def _module_name(path: Path) -> str:
    parts = ("funcsac",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node, module: str, is_package: bool):
    """The funcsac modules an import statement in ``module`` names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "funcsac"]
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
    if not target or target.split(".")[0] != "funcsac":
        return []
    subs = [f"{target}.{a.name}" for a in node.names]
    return [s for s in subs if _exists(s)] or [target]


def _exists(module: str) -> bool:
    path = PACKAGE.joinpath(*module.split(".")[1:])
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _imports(path: Path):
    """(module-level funcsac imports, funcsac imports inside functions) of one file."""
    module, tree = _module_name(path), ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    top = {m for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
           for m in _imported(node, module, is_package)}
    inner = {(f.name, m) for f in ast.walk(tree)
             if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for node in ast.walk(f) if isinstance(node, (ast.Import, ast.ImportFrom))
             for m in _imported(node, module, is_package)}
    return top, inner


def test_the_core_imports_form_no_circle_and_none_hides_in_a_function():
    graph, inner = {}, {}
    for path in CORE:
        graph[_module_name(path)], inner[_module_name(path)] = _imports(path)
    # only the package's __getattr__ loads the driver, on request
    assert {m: i for m, i in inner.items() if i} == {
        "funcsac": {("__getattr__", "funcsac.driver")}}
    assert graph["funcsac.registry"] == set()  # the bottom floor

    def visit(module, path):
        if module in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(module):]
                                                                  + [module]))
        for dep in graph.get(module, ()):
            if dep != "funcsac":  # importing a submodule runs the package first: not an edge
                visit(dep, path + [module])

    for module in graph:
        if module != "funcsac":
            visit(module, [])


# each variant's names (its algorithm's, networks', policy family's, presets') by its folder in
# funcsac/variants; "sac" is the default algorithm's and "drq" the default image encoder's too
VARIANT_NAMES = {"tqc": "tqc", "crossq": "crossq", "categorical_q": "categorical_q",
                 "simba": "simba", "simbav2": "simbav2", "simbav2-utd1": "simbav2",
                 "flashsac": "flashsac", "bro": "bro", "bronet": "bro", "categorical": "discrete",
                 "redq": "redq", "droq": "droq", "rlpd": "rlpd"}


def _folder(rel: str):
    """The variant folder a package file lies in (``None`` outside funcsac/variants)."""
    parts = Path(rel).parts
    return parts[1] if parts[0] == "variants" and len(parts) > 2 else None


def test_every_variant_is_one_folder_that_names_itself():
    """A variant's names are said only in its folder (and the environment's mapping of action
    spaces to a policy family): the base code names none, nor does another variant."""
    assert set(VARIANT_NAMES.values()) | {"sac", "drq"} == {
        p.name for p in (PACKAGE / "variants").iterdir() if (p / "__init__.py").exists()}
    found = []
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE))
        tree = ast.parse(path.read_text())
        exported = {id(c) for node in tree.body if isinstance(node, ast.Assign)
                    and [getattr(t, "id", None) for t in node.targets] == ["__all__"]
                    for c in ast.walk(node.value)}  # module names in __all__ are not settings
        for node in ast.walk(tree):
            said = node.value if isinstance(node, ast.Constant) else None
            if said in VARIANT_NAMES and id(node) not in exported:
                if _folder(rel) != VARIANT_NAMES[said] and rel != "driver/envs/spec.py":
                    found.append(f"{rel}:{node.lineno}: {said!r}")
    assert not found


def test_the_base_code_names_no_variants_option():
    """A variant's options are named only in the modules of the variants that have them and in
    the presets (``variants/*/presets.py``): no other module reads, sets or checks them (they
    reach the command line and config files through the registry)."""
    owners = {}
    for _, variant in funcsac.registry.variants():
        if variant.options is not None:
            module = sys.modules[variant.options.__module__].__file__
            for name in funcsac.registry.option_names(variant.options):
                owners.setdefault(name, set()).add(str(Path(module).relative_to(PACKAGE)))
    assert {"num_quantiles", "critic_batch_renorm", "image_pad"} <= set(owners)
    found = []
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text())):
            said = (node.value if isinstance(node, ast.Constant) else
                    node.attr if isinstance(node, ast.Attribute) else
                    node.arg if isinstance(node, ast.keyword) else None)
            if said in owners and rel not in owners[said] and not (
                    _folder(rel) and Path(rel).name == "presets.py"):
                found.append(f"{rel}:{node.lineno}: {said!r}")
    assert not found


# a variant outside funcsac: critics with two heads (Q is their mean), no target networks (the
# target takes the online critics' mean, without gradient), every critic in the target


def _heads(static, critic, obs, action, key=None):
    return funcsac.apply_critics(static.critic, critic, obs, action, key).mean(-1)  # [N, B]


def _two_heads_target(state, batch, key):
    return soft_target(state, batch, key, lambda a, k: _heads(
        state.static, state.critic, batch.next_obs, a, k).detach().mean(0))


def _two_heads_critic_loss(critic, state, batch, target, key):
    q = _heads(state.static, critic, batch.obs, batch.action, key)
    return (0.5 * (batch.weight * (q - target).square()).mean(-1).sum(0),
            funcsac.CriticOut(q, target))


def _two_heads_actor_loss(actor, state, batch, key):
    return policy_loss(actor, state, batch.obs, key, lambda a, k: _heads(
        state.static, state.critic, batch.obs, a, k).mean(0))


def _every_critic(config):
    if config.num_target_critics != config.num_critics:
        raise ValueError("two-heads takes every critic: set num_target_critics = num_critics")


TWO_HEADS = funcsac.Algorithm(
    "two-heads", funcsac.Losses(critic=_two_heads_critic_loss, actor=_two_heads_actor_loss,
                                target=_two_heads_target),
    help="two heads per critic, no target networks", target_networks=False,
    critic_outputs=lambda config: 2, check=_every_critic)


@pytest.fixture
def two_heads():
    funcsac.register(TWO_HEADS)
    yield TWO_HEADS.name
    del funcsac.ALGORITHMS[TWO_HEADS.name]


def test_a_variant_defined_outside_funcsac_updates(two_heads):
    with pytest.raises(ValueError, match="two-heads takes every critic"):
        small_config(algorithm=two_heads, num_critics=3)
    cfg = small_config(algorithm=two_heads, dtype=torch.float64)
    state, batch = funcsac.init_state(cfg, seed=0), make_batch(cfg)
    assert state.target_critic == {} and cfg.critic_outputs == 2
    assert state.critic["4.weight"].shape[:2] == (2, 2)  # [N critics, 2 heads, ...]
    new, metrics = funcsac.update(state, batch)
    k_target, k_critic = keys.split(keys.split(state.key, 3)[1], 2)  # the critic step's
    target = _two_heads_target(state, batch, k_target)
    q = _heads(state.static, state.critic, batch.obs, batch.action, k_critic)
    torch.testing.assert_close(metrics["critic_loss"],
                               0.5 * (q - target).square().mean(-1).sum(0))
    assert new.target_critic == {} and not torch.equal(new.critic["4.weight"],
                                                       state.critic["4.weight"])
    assert "two-heads (tanh_gaussian): two heads per critic" in funcsac.registry.algorithm_help()


def test_a_variant_defined_outside_funcsac_trains_loads_and_exports(two_heads, tmp_path):
    cfg = funcsac.TrainConfig(**TINY, env_id="Pendulum-v1", algorithm=two_heads, total_steps=300,
                              learning_starts=100, eval_every=150, seed=1)
    result = funcsac.train(cfg, tmp_path)
    assert [e.step for e in result.evals] == [150, 300]
    agent = funcsac.load(tmp_path)
    assert agent.state.config.algorithm == two_heads and agent.state.target_critic == {}
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    with torch.no_grad():
        exported = policy_module(agent)(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(exported, agent.act(obs), rtol=1e-6, atol=1e-6)


def test_no_public_name_hides_a_submodule():
    """``import funcsac.X as m`` gives the module X: no attribute of the package of the same name
    is something else (a function imported from it, say)."""
    import importlib
    import pkgutil
    import types
    for info in pkgutil.iter_modules(funcsac.__path__):
        if info.name == "__main__":  # runs the command line
            continue
        if hasattr(funcsac, info.name):
            assert isinstance(getattr(funcsac, info.name), types.ModuleType), info.name
        assert importlib.import_module(f"funcsac.{info.name}").__name__ == f"funcsac.{info.name}"
