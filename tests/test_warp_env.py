"""warp/HalfCheetah-v5 (funcsac.driver.envs.warp_half_cheetah): N rows of gymnasium's
HalfCheetah-v5 on MuJoCo Warp, stepped on tensors, against gymnasium's own rows."""
import numpy as np
import pytest
import torch

pytest.importorskip("mujoco_warp", reason="the warp extra")
gym = pytest.importorskip("gymnasium")

from funcsac.driver.envs.warp_half_cheetah import EPISODE_STEPS, WarpHalfCheetah  # noqa: E402
from helpers import TINY  # noqa: E402


@pytest.fixture(scope="module")
def cheetahs():
    """Three rows (one Warp model for the module: its kernels compile once)."""
    return WarpHalfCheetah(3)


def test_each_row_steps_as_gymnasiums_halfcheetah(cheetahs):
    envs = [gym.make("HalfCheetah-v5").unwrapped for _ in range(3)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    cheetahs.reset(seed=0)
    obs = cheetahs.set_state(torch.tensor(np.stack([e.data.qpos for e in envs])),
                             torch.tensor(np.stack([e.data.qvel for e in envs])))
    torch.testing.assert_close(obs, torch.tensor(np.stack([e._get_obs() for e in envs]),
                                                 dtype=torch.float32))
    rng = np.random.default_rng(0)
    for _ in range(10):  # float32 physics against float64: within 1e-2 for ten steps
        action = rng.uniform(-1, 1, (3, 6))
        out = cheetahs.step(torch.tensor(action, dtype=torch.float32))
        expected = [e.step(a) for e, a in zip(envs, action)]
        torch.testing.assert_close(out.final_obs, torch.tensor(
            np.stack([x[0] for x in expected]), dtype=torch.float32), atol=1e-2, rtol=0)
        torch.testing.assert_close(out.reward, torch.tensor(
            [x[1] for x in expected], dtype=torch.float32), atol=5e-3, rtol=0)
        assert not out.terminated.any() and not out.truncated.any()
        assert torch.equal(out.obs, out.final_obs)


def test_rows_start_anew_together_after_1000_steps(cheetahs):
    cheetahs.reset(seed=1)
    cheetahs.t = EPISODE_STEPS - 1
    out = cheetahs.step(torch.zeros(3, 6))
    assert out.truncated.all() and not out.terminated.any() and cheetahs.t == 0
    assert not torch.allclose(out.obs, out.final_obs)  # the next episode's first
    first = out.obs[:, :8]  # qpos[1:] of a fresh episode: qpos0 + U(-0.1, 0.1)
    assert first.abs().max() <= 0.1 + 1e-6 and len({tuple(r.tolist()) for r in first}) == 3


def test_a_saved_state_continues_bitwise(cheetahs):
    cheetahs.reset(seed=2)
    actions = [torch.rand(3, 6) * 2 - 1 for _ in range(6)]
    for a in actions[:3]:
        cheetahs.step(a)
    saved = cheetahs.state_dict()
    ahead = [cheetahs.step(a).obs for a in actions[3:]]
    cheetahs.reset(seed=9)
    cheetahs.load_state_dict(saved)
    again = [cheetahs.step(a).obs for a in actions[3:]]
    assert all(torch.equal(x, y) for x, y in zip(ahead, again))
    with pytest.raises(ValueError, match=r"positions \[3, 9\] expected, got \[2, 9\]"):
        cheetahs.load_state_dict({**saved, "qpos": torch.zeros(2, 9)})
    with pytest.raises(ValueError, match="not a WarpHalfCheetah's saved state"):
        cheetahs.load_state_dict({"t": 0})


def test_the_driver_trains_on_it_and_evaluates_on_gymnasium(tmp_path):
    import funcsac

    result = funcsac.train(funcsac.TrainConfig(**{
        **TINY, "env_id": "warp/HalfCheetah-v5", "num_envs": 4, "total_steps": 240,
        "learning_starts": 120, "eval_every": 0}), tmp_path)
    assert result.evals and np.isfinite(result.evals[-1].return_mean)
