"""bench/studies/precision.py's memory floor: the bytes a gradient step moves at least for its
state."""
import os
import pathlib

import funcsac

ROOT = pathlib.Path(__file__).parents[1]


def test_state_traffic_counts_each_state_tensor_twice_and_each_gradient_twice(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    # the bench's first import sets this variable; the test's end restores it
    monkeypatch.setenv("FUNCSAC_MKL_VENDOR_CHECK",
                       os.environ.get("FUNCSAC_MKL_VENDOR_CHECK", "auto"))
    from bench.studies.precision import state_traffic
    state = funcsac.init_state(funcsac.SACConfig.of(obs_dim=3, act_dim=1, hidden_sizes=(4,)))
    actor = 3 * 4 + 4 + 4 * 2 + 2  # to 4 hidden units, then the mean and the log-std
    critic = 2 * ((3 + 1) * 4 + 4 + 4 * 1 + 1)  # two critics of (obs, action) -> 4 -> 1
    trainable = actor + critic + 1  # and the temperature's log-alpha
    hparams = 6  # the learning rates, tau, gamma and the target entropy
    floats = trainable + critic + 2 * trainable + hparams  # the targets, Adam's two moments
    assert state_traffic(state) == 4 * (2 * floats + 2 * trainable)
