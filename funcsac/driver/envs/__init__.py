"""Environments: what the agent needs of their spaces (``spec``), making them (``make``), a vector
step's real transitions (``step``), and saving and restoring their state for resume (``state``)."""
