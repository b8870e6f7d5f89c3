"""Imported first by the bench scripts: MKL's kernels chosen as the ``funcsac`` command chooses
them (``funcsac.accel.blas``: on AMD CPUs, by the verdict kept for the machine), before torch
loads."""
import os

os.environ.setdefault("FUNCSAC_MKL_VENDOR_CHECK", "auto")
