"""The data-parallel update (funcsac.parallel) on CPU over gloo: ranks with half the batch each
take the step that one process takes on the whole batch (its rows' noise drawn from the ranks'
keys), checked against the imperative reference, and stay equal over 100 steps."""
from pathlib import Path

import pytest
import torch

import funcsac
from funcsac import keys
from funcsac.parallel import Ranks, mean_over_ranks, parallel_losses
from helpers import make_batch, small_config, torchrun
from reference import ReferenceSAC, assert_params_match

HERE = Path(__file__).parent


class TwoRanksReference(ReferenceSAC):
    """ReferenceSAC's step on two halves of the batch, each drawing its noise from the step's
    keys folded with its rank, the losses averaged over the halves (so their gradients are)."""

    def update(self, batch: funcsac.Batch):
        B = batch.reward.shape[0] // 2
        halves = [funcsac.Batch(*(x[r * B:(r + 1) * B] for x in batch)) for r in (0, 1)]
        k_target, k_actor = self.split_key()
        alpha = self.log_alpha.detach().exp()
        critic_loss = sum(self.critic_loss(h.obs, h.action,
                                           self.target(h, keys.fold_in(k_target, r), alpha),
                                           h.weight) for r, h in enumerate(halves)) / 2
        self.descend(self.critic_opt, critic_loss)
        self.polyak()
        actor_loss = alpha_loss = 0
        for r, h in enumerate(halves):
            a, logp = self.sample(h.obs, keys.split(keys.fold_in(k_actor, r), 2)[0])
            actor_loss = actor_loss + (alpha * logp - self.actor_value(h.obs, a)).mean() / 2
            alpha_loss = alpha_loss + self.alpha_loss(logp.detach()) / 2
        self.descend(self.actor_opt, actor_loss)
        self.descend(self.alpha_opt, alpha_loss)
        self.step += 1


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """The states two gloo ranks reach (tests/parallel_worker.py), by case."""
    def run(case: str, steps: int):
        out = tmp_path_factory.mktemp(case)
        done = torchrun(2, HERE / "parallel_worker.py", out, steps, case, cwd=HERE)
        assert done.returncode == 0, done.stderr[-3000:]
        return [torch.load(out / f"rank{r}.pt") for r in (0, 1)]
    return run


@pytest.mark.parametrize("case", ["sac", "redq"])
def test_two_ranks_take_the_whole_batch_step(two_ranks, case):
    from parallel_worker import B, CASES, COMPARED
    rank0, rank1 = two_ranks(case, COMPARED)
    cfg = small_config(dtype=torch.float64, gamma=0.9, tau=0.05, **CASES[case])
    ref = TwoRanksReference(funcsac.init_state(cfg, seed=1))
    for step in range(COMPARED):
        ref.update(make_batch(cfg, batch_size=2 * B, seed=step))
    assert_params_match(funcsac.init_state(cfg, seed=1).replace(**rank0["state"]), ref)
    torch.testing.assert_close(rank0["digests"], rank1["digests"], rtol=0, atol=0)


def test_ranks_stay_equal_over_100_steps(two_ranks):
    rank0, rank1 = two_ranks("crossq", 100)  # batch-norm buffers averaged with the gradients
    assert torch.equal(rank0["digests"], rank1["digests"])
    assert not torch.equal(rank0["digests"][0], rank0["digests"][-1])  # the state moved


def test_one_rank_is_the_plain_update():
    cfg = small_config()
    losses = funcsac.losses_for(cfg)
    assert parallel_losses(losses, Ranks()) is losses
    tree = {"a": torch.ones(3)}
    assert mean_over_ranks(tree, Ranks()) is tree
