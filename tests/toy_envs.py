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
