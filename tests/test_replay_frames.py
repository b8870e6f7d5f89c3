"""Stacked frames kept once in the replay buffer (``FrameStacks``): what is drawn is what was
added, bit for bit, across episode ends of several environments under both autoreset modes, a
wrapped ring, prioritized replay and a restore from the checkpoint's chunks; what cannot be kept
once is refused."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import funcsac
from funcsac.driver.envs.make import Pixels, pixel_env
from funcsac.driver.envs.step import transitions
from funcsac.driver.replay.buffer import ReplayBuffer
from funcsac.driver.replay.files import load_buffer, save_buffer
from funcsac.driver.replay.frames import FrameStacks

K, SIZE, ENVS, CAPACITY = 3, 16, 2, 10
SHAPE = (3 * K, SIZE, SIZE)
leaves = torch.utils._pytree.tree_leaves


def _buffer(frames: bool, priority=None) -> ReplayBuffer:
    return ReplayBuffer(CAPACITY, SHAPE, 1, "cpu", obs_dtype=torch.uint8, priority=priority,
                        frames=FrameStacks(K, 3, ENVS) if frames else None)


def _stream(mode, steps: int):
    """The rows of ``steps`` vector steps of two pixel envs whose episodes last 7 steps, with
    each row's environment: ``[(rows, streams)]``."""
    envs = gym.vector.SyncVectorEnv(
        [lambda: pixel_env(gym.make("Pendulum-v1", render_mode="rgb_array",
                                    max_episode_steps=7), Pixels(SIZE, K))] * ENVS,
        autoreset_mode=mode)
    obs, _ = envs.reset(seed=0)
    prev_done, out = np.zeros(ENVS, bool), []
    rng = np.random.default_rng(0)
    for _ in range(steps):
        action = rng.uniform(-2, 2, (ENVS, 1)).astype(np.float32)
        next_obs, reward, terminated, truncated, infos = envs.step(action)
        valid, true_next = transitions(mode, next_obs, terminated, truncated, infos, prev_done)
        rows = dict(obs=obs[valid], action=action[valid], reward=reward[valid],
                    next_obs=true_next[valid], terminated=terminated[valid])
        out.append(({k: torch.as_tensor(v) for k, v in rows.items()},
                    torch.arange(ENVS)[torch.as_tensor(valid)]))
        obs, prev_done = next_obs, terminated | truncated
    envs.close()
    return out


def _row_numbers(buffer: ReplayBuffer, positions: torch.Tensor) -> torch.Tensor:
    return buffer.first_held + (positions - buffer.first_held) % buffer.slots


def _assert_drawn_as_added(buffer, added, key, priority=False):
    """A draw of 64 rows with ``key``: each is the row of its number as it was added."""
    batch, positions = buffer.sample(key, 64)
    numbers = _row_numbers(buffer, positions)
    assert bool((numbers >= buffer.oldest).all()) and bool((numbers < buffer.added).all())
    for j, row in enumerate(numbers.tolist()):
        assert torch.equal(batch.obs[j], added["obs"][row])
        assert torch.equal(batch.next_obs[j], added["next_obs"][row])
        assert torch.equal(batch.action[j], added["action"][row])


@pytest.mark.parametrize("mode", [gym.vector.AutoresetMode.NEXT_STEP,
                                  gym.vector.AutoresetMode.SAME_STEP])
def test_stacked_frames_kept_once_are_drawn_as_they_were_added(mode, tmp_path):
    stream = _stream(mode, 30)
    added = {k: torch.cat([rows[k] for rows, _ in stream]) for k in ("obs", "next_obs",
                                                                      "action")}
    plain, framed, prioritized = _buffer(False), _buffer(True), _buffer(True, (0.6, 1e-6))
    for step, (rows, streams) in enumerate(stream):
        plain.add(rows)
        framed.add(rows, streams)
        prioritized.add(rows, streams)
        key = funcsac.keys.make_key(step)
        if framed.added <= CAPACITY:  # until the ring wraps, the same draws as the plain buffer
            for x, y in zip(framed.sample(key, 16), plain.sample(key, 16)):
                assert all(torch.equal(a, b) for a, b in zip(leaves(x), leaves(y), strict=True))
        _assert_drawn_as_added(framed, added, key)
        _assert_drawn_as_added(prioritized, added, key)
        # a priority written for a row that has since left the drawn rows keeps it out
        held = torch.arange(prioritized.first_held, prioritized.added) % prioritized.slots
        prioritized.set_priorities(held, torch.ones(len(held)))
        if step == 20:  # restored from a checkpoint's chunks, it goes on as the original
            entry = save_buffer(tmp_path, 0, framed, {})
            restored = _buffer(True)
            load_buffer(tmp_path, 0, restored, entry)
            framed = restored
    assert framed.added > 2 * CAPACITY
    # one frame of an observation and one of its next, against 2 x K: a K-th of the bytes
    per_row = lambda b: sum(x[0].numel() * x.element_size() for x in b.data.values())  # noqa
    assert per_row(plain) == 2 * 3 * K * SIZE ** 2 + 3 * 4  # action, reward, terminated
    assert per_row(framed) == 2 * 3 * SIZE ** 2 + 3 * 4 + 2 * 8  # and prev, stream


def test_what_stacked_frames_cannot_keep_once_is_refused():
    frames = torch.arange(3 * K * SIZE * SIZE, dtype=torch.int64).reshape(1, *SHAPE) % 251
    rows = lambda obs, nxt: dict(obs=obs.to(torch.uint8), action=torch.zeros(1, 1),  # noqa
                                 reward=torch.zeros(1), next_obs=nxt.to(torch.uint8),
                                 terminated=torch.zeros(1))
    shifted = torch.cat([frames[:, 3:], frames[:, :3]], 1)
    with pytest.raises(ValueError, match="replay row 0: its obs is neither the next observation "
                                         "of the row before it in environment 0 nor an episode's "
                                         "first"):
        _buffer(True).add(rows(frames, shifted), torch.tensor([0]))
    first = frames[:, -3:].repeat(1, K, 1, 1)
    with pytest.raises(ValueError, match="its next_obs is not its obs shifted by one frame"):
        _buffer(True).add(rows(first, frames), torch.tensor([0]))
    buffer = _buffer(True)
    buffer.add(rows(first, torch.cat([first[:, 3:], frames[:, :3]], 1)), torch.tensor([0]))
    assert buffer.added == 1
    # a refused step stores nothing and leaves each environment's last row as it was: a row
    # that would continue its first (valid) row has nothing to continue
    before = {k: v.clone() for k, v in buffer.data.items()}
    good_next = torch.cat([first[:, 3:], frames[:, :3]], 1)
    two = {k: torch.cat([a, b]) for (k, a), b in zip(rows(first, good_next).items(),
                                                     rows(first, shifted).values())}
    with pytest.raises(ValueError, match="replay row 2: its next_obs is not its obs shifted"):
        buffer.add(two, torch.tensor([1, 0]))
    assert buffer.added == 1 and all(torch.equal(before[k], v) for k, v in buffer.data.items())
    with pytest.raises(ValueError, match="replay row 1: its obs is neither"):
        buffer.add(rows(good_next, torch.cat([good_next[:, 3:], frames[:, :3]], 1)),
                   torch.tensor([1]))
