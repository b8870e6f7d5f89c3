"""The driver's own cost per env step: the collect stage (keys, acting, action scaling,
transition extraction, buffer writes, bookkeeping) minus the time inside ``envs.step``, on
Pendulum-v1, at 1 and 8 envs, in the random-action phase and with the policy acting; and with the
policy acting at 1 env, with each replay feature (n-step 3, prioritized replay's new-row
priorities, normalisation's statistics) on."""
import time

import pytest

import funcsac
from funcsac.driver.run.loop import Run

STEPS = 2_000


FEATURES = {"plain": {}, "n_step_3": {"n_step": 3}, "prioritized": {"prioritized": True},
            "normalized": {"normalize_obs": True, "scale_rewards": True}}
CASES = ([(n, phase, "plain") for n in (1, 8) for phase in ("random", "policy")]
         + [(1, "policy", f) for f in FEATURES if f != "plain"])


@pytest.mark.parametrize("num_envs,phase,feature", CASES)
def test_driver_cost_per_env_step(benchmark, tmp_path, device, num_envs, phase, feature):
    cfg = funcsac.TrainConfig(env_id="Pendulum-v1", num_envs=num_envs, compile=False,
                              progress=False, learning_starts=10**9 if phase == "random" else 0,
                              device=str(device), **FEATURES[feature])
    run = Run(cfg, tmp_path, None)
    inside = [0.0]
    real_step = run.envs.step

    def timed_step(action):
        start = time.perf_counter()
        out = real_step(action)
        inside[0] += time.perf_counter() - start
        return out

    run.envs.step = timed_step

    def collect_many():
        inside[0] = 0.0
        start = time.perf_counter()
        for _ in range(STEPS // num_envs):
            run.collect()
        return (time.perf_counter() - start - inside[0]) / STEPS

    per_step = []
    benchmark.group = "driver-overhead"
    benchmark.pedantic(lambda: per_step.append(collect_many()), rounds=5, iterations=1,
                       warmup_rounds=1)
    run.close()
    benchmark.extra_info.update(num_envs=num_envs, phase=phase, feature=feature,
                                driver_ms_per_env_step=1e3 * sorted(per_step)[len(per_step) // 2])
