"""Replay: the buffer (``buffer``), prioritized sampling (``priority``), n-step transitions
(``nstep``), offline datasets (``datasets``), the batches of one learn stage (``sampling``) and the
buffer's files in a run directory (``files``)."""
