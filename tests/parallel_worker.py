"""One rank of a data-parallel update run for tests/test_parallel.py, started by torchrun:
``python -m torch.distributed.run --nproc-per-node W tests/parallel_worker.py OUT STEPS CASE``.

Rank ``r`` takes rows ``[r * B, (r + 1) * B)`` of each step's batch of ``W * B`` rows
(``make_batch(cfg, W * B, seed=step)``), and writes to ``OUT/rank{r}.pt`` its state's leaves
after ``COMPARED`` steps and the digest of its state after every step. CASE ``train``: a
``funcsac.train`` run of STEPS env steps into ``OUT/run`` in the process group set up here, as
code that runs its own (Ray Train's workers) calls it. CASE ``from_rank_zero``: each rank's
state of seed ``rank`` made rank 0's (``ranks.from_rank_zero``), its digest to
``OUT/rank{r}.pt``."""
import sys

import torch
import torch.distributed as dist

import funcsac
from funcsac.parallel import Ranks, parallel_losses, state_digest
from helpers import TINY, make_batch, small_config

B, COMPARED = 8, 3
CASES = {"sac": dict(), "redq": dict(num_critics=5, num_target_critics=2),
         "crossq": dict(algorithm="crossq", critic_batch_renorm=True, actor_batch_renorm=True)}


def main(out: str, steps: int, case: str) -> None:
    dist.init_process_group("gloo")
    if case == "from_rank_zero":
        from funcsac.driver.run.ranks import from_rank_zero
        cfg = small_config(algorithm="crossq", critic_batch_renorm=True)
        state = from_rank_zero(Ranks.current(), funcsac.init_state(cfg, seed=dist.get_rank()))
        torch.save({"digests": state_digest(state)}, f"{out}/rank{dist.get_rank()}.pt")
        dist.destroy_process_group()
        return
    if case == "train":
        funcsac.train(funcsac.TrainConfig(**{**TINY, "env_id": "Pendulum-v1", "total_steps": steps,
                                             "learning_starts": steps // 2}), f"{out}/run")
        assert dist.is_initialized()  # the caller's group, left to the caller
        dist.destroy_process_group()
        return
    ranks = Ranks.current()
    cfg = small_config(dtype=torch.float64, gamma=0.9, tau=0.05, **CASES[case])
    losses = parallel_losses(funcsac.losses_for(cfg), ranks)
    update = funcsac.make_update(losses)
    state = funcsac.init_state(cfg, seed=1)
    digests, compared = [], None
    for step in range(steps):
        batch = make_batch(cfg, batch_size=ranks.world * B, seed=step)
        mine = funcsac.Batch(*(x[ranks.rank * B:(ranks.rank + 1) * B] for x in batch))
        state, _ = update(state, mine)
        digests.append(state_digest(state))
        if step + 1 == COMPARED:
            compared = {f: getattr(state, f) for f in
                        ("actor", "critic", "target_critic", "log_alpha", "key", "step")}
    torch.save({"digests": torch.stack(digests), "state": compared},
               f"{out}/rank{ranks.rank}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
