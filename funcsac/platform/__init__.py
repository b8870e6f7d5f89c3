"""The machine funcsac runs on: its CPU (``cpu``), MKL's kernels for it (``blas``), what results
depend on beyond their inputs (``numerics``), devices (``devices``), files written whole and the
cache folder (``files``), child processes that die with their parent (``children``), freed
memory kept for reuse (``memory``) and the command's threads on a shared CPU (``threads``).
``blas``, ``threads`` and what they import (``cpu``, ``files``, ``children``) import no torch:
they run before torch loads."""
