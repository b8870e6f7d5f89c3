"""The machine funcsac runs on: its CPU (``cpu``), MKL's kernels for it (``blas``), what results
depend on beyond their inputs (``numerics``), devices (``devices``), files written whole and the
cache folder (``files``), child processes that die with their parent (``children``), and freed
memory kept for reuse (``memory``).
``blas`` and what it imports (``cpu``, ``files``, ``children``) import no torch: it runs before
torch loads."""
