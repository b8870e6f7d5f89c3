"""After training: load a run (``load``), evaluate and record it (``evaluate``), export its policy
(``export``), record a dataset with it (``collect``), plot runs (``plot``), and sweeps on Ray Tune
(``tune``, ``search``)."""
