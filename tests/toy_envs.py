"""Small gymnasium environments with known episode structure, for driver tests."""
import gymnasium as gym
import numpy as np


class CountEnv(gym.Env):
    """obs = [episode, t]; every episode lasts 3 steps, reward t + 1 at step t. Even episodes end
    by termination, odd ones by truncation (a time limit)."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.episode = -1
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode += 1
        self.t = 0
        return np.array([self.episode, 0], np.float32), {}

    def step(self, action):
        self.t += 1
        end = self.t == 3
        terminated, truncated = end and self.episode % 2 == 0, end and self.episode % 2 == 1
        return (np.array([self.episode, self.t], np.float32), float(self.t), terminated, truncated,
                {})


gym.register("funcsac-test/Count-v0", entry_point=CountEnv)


class SpaceEnv(gym.Env):
    """An env with the given spaces, returning ``obs_value`` as observation."""

    def __init__(self, observation_space, action_space, obs_value=0.0):
        self.observation_space, self.action_space = observation_space, action_space
        self.obs_value = obs_value

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        obs = np.full(self.observation_space.shape, self.obs_value, np.float32)
        return obs, 0.0, False, False, {}


_BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
gym.register("funcsac-test/DictObs-v0", entry_point=SpaceEnv, kwargs=dict(
    observation_space=gym.spaces.Dict({"a": _BOX, "b": gym.spaces.Discrete(3)}),
    action_space=_BOX))
gym.register("funcsac-test/TupleAction-v0", entry_point=SpaceEnv, kwargs=dict(
    observation_space=_BOX, action_space=gym.spaces.Tuple((_BOX, _BOX))))
gym.register("funcsac-test/MultiDiscreteAction-v0", entry_point=SpaceEnv, kwargs=dict(
    observation_space=_BOX, action_space=gym.spaces.MultiDiscrete([2, 3])))
gym.register("funcsac-test/UnboundedAction-v0", entry_point=SpaceEnv, kwargs=dict(
    observation_space=_BOX, action_space=gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)))
gym.register("funcsac-test/NaNObs-v0", entry_point=SpaceEnv, kwargs=dict(
    observation_space=_BOX, action_space=_BOX, obs_value=np.nan))


class CameraStateEnv(gym.Env):
    """A random ``size x size`` RGB image (channels last), alone or in a Dict beside a 4-vector
    (``with_state``), as a robot's camera and joints; episodes of 100 steps."""

    def __init__(self, size=64, with_state=True):
        image = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.with_state = with_state
        self.observation_space = (gym.spaces.Dict({
            "image": image, "joints": gym.spaces.Box(-1.0, 1.0, (4,), np.float32)})
            if with_state else image)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.t = 0

    def _obs(self):
        image = self.np_random.integers(0, 256, self.observation_space["image"].shape
                                        if self.with_state else self.observation_space.shape,
                                        np.uint8)
        if not self.with_state:
            return image
        return {"image": image, "joints": self.np_random.uniform(-1, 1, 4).astype(np.float32)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(np.sum(action)), False, self.t == 100, {}


gym.register("funcsac-test/CameraState-v0", entry_point=CameraStateEnv)
gym.register("funcsac-test/SmallCameraState-v0", entry_point=CameraStateEnv, kwargs=dict(size=16))
gym.register("funcsac-test/SmallCamera-v0", entry_point=CameraStateEnv,
             kwargs=dict(size=16, with_state=False))


class FaultyPendulum(gym.Wrapper):
    """Pendulum-v1 that fails at its ``at``-th step since it was made: ``fault`` "raise" (an
    error in ``step``), "nan-obs" or "inf-reward"."""

    def __init__(self, fault="raise", at=150):
        super().__init__(gym.make("Pendulum-v1"))
        self.fault, self.at, self.steps = fault, at, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps == self.at:
            if self.fault == "raise":
                raise RuntimeError("the simulator lost its sensor")
            if self.fault == "nan-obs":
                obs = np.full_like(obs, np.nan)
            else:
                reward = np.inf
        return obs, reward, terminated, truncated, info


for _fault in ("raise", "nan-obs", "inf-reward"):
    gym.register(f"funcsac-test/Faulty-{_fault}-v0", entry_point=FaultyPendulum,
                 kwargs=dict(fault=_fault), max_episode_steps=200)
