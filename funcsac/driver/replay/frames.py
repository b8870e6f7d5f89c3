"""Stacked frames kept once in the replay buffer.

A pixels run observes ``[k * c, H, W]``: the last ``k`` frames of ``c`` channels, oldest first,
an episode's first frame repeated before it (gymnasium's ``FrameStackObservation``). Consecutive
rows of one environment share ``k - 1`` of their frames, and a row's next observation is its
observation shifted by one frame, so a row keeps only the newest frame of its observation and of
its next one, and ``prev``: the number of the row before it in its environment's episode (-1 at
an episode's start). The stacks are rebuilt at sampling time by following ``prev`` back ``k - 1``
rows. A row is linked only where its frames equal its predecessor's next observation, so what
is rebuilt is always what was added (checked at each ``add``).
"""
from __future__ import annotations

import dataclasses
from typing import Dict

import torch

Rows = Dict[str, torch.Tensor]


@dataclasses.dataclass(frozen=True)
class FrameStacks:
    """Image entries ``field`` (``"obs"``, or ``"obs.pixels"`` of a dict observation) of ``k``
    frames of ``c`` channels each, from at most ``streams`` environments a step."""

    k: int
    c: int
    streams: int
    field: str = "obs"

    @property
    def next_field(self) -> str:
        return f"next_{self.field}"

    @property
    def reach(self) -> int:
        """How many rows back a row's predecessor may lie (two vector steps' rows)."""
        return 2 * self.streams

    @property
    def margin(self) -> int:
        """Rows held beyond the buffer's capacity, which the oldest rows' stacks read."""
        return self.reach * self.k

    def stored_shapes(self, shapes: Dict[str, tuple]) -> Dict[str, tuple]:
        """The buffer's field shapes: each image field's newest frame ``[c, H, W]``, and the
        ``prev`` and ``stream`` numbers (int64)."""
        frame = (self.c, *shapes[self.field][1:])
        return {**shapes, self.field: frame, self.next_field: frame, "prev": (), "stream": ()}

    def encode(self, rows: Rows, streams: torch.Tensor, first: int, last: dict):
        """``rows`` (numbered ``first, first + 1, ...``, of environments ``streams [n]``) as
        the buffer keeps them, and ``last`` with these rows: ``last`` maps each environment to
        its newest row and that row's next observation (on the CPU; not changed here, so a
        refused step leaves it as it was). ``ValueError`` where an observation is
        neither the previous next observation of its environment nor an episode's first (one
        frame repeated), or a next observation is not the observation shifted by one frame."""
        obs, nxt = (torch.as_tensor(rows[f]).cpu() for f in (self.field, self.next_field))
        c = self.c
        prev, last = torch.full((len(obs),), -1, dtype=torch.int64), dict(last)
        for i, s in enumerate(streams.tolist()):
            o, n = obs[i], nxt[i]
            row, before = last.get(s, (None, None))
            if row is not None and first + i - row <= self.reach and torch.equal(o, before):
                prev[i] = row
            elif not torch.equal(o, o[-c:].repeat(self.k, 1, 1)):
                raise ValueError(f"replay row {first + i}: its {self.field} is neither the next "
                                 f"observation of the row before it in environment {s} nor an "
                                 f"episode's first ({self.k} equal frames): expected stacks of "
                                 f"{self.k} frames of {c} channels, as FrameStackObservation "
                                 "makes them")
            if not torch.equal(n[:-c], o[c:]):
                raise ValueError(f"replay row {first + i}: its {self.next_field} is not its "
                                 f"{self.field} shifted by one frame of {c} channels")
            last[s] = (first + i, n)
        return {**rows, self.field: obs[:, -c:], self.next_field: nxt[:, -c:], "prev": prev,
                "stream": streams.to(torch.int64)}, last

    def stacks(self, data: Rows, rows: Rows, positions: torch.Tensor, slots: int) -> Rows:
        """``rows`` (the buffer's rows at ``positions [B]``, ``data``'s other fields) with their
        observation and next observation stacked again, ``[B, k * c, H, W]``."""
        frames, at = [rows[self.field]], positions
        for _ in range(self.k - 1):  # back along the episode; its first frame repeats
            before = torch.index_select(data["prev"], 0, at)
            at = torch.where(before >= 0, before % slots, at)
            frames.insert(0, torch.index_select(data[self.field], 0, at))
        return {**rows, self.field: torch.cat(frames, 1),
                self.next_field: torch.cat(frames[1:] + [rows[self.next_field]], 1)}
