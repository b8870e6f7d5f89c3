"""The training run: its loop (``loop``) over a collector (``collector``), a learner (``learner``)
and a recorder (``recorder``) sharing the loop's ``progress``; the agents of a run (``agents``,
``seeds``); its checkpoint, resume and directory (``checkpoint``, ``resume``, ``rundir``); logs and
callbacks (``logs``, ``callbacks``)."""
