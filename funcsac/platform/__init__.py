"""The machine funcsac runs on: its CPU (``cpu``), what results depend on beyond their inputs
(``numerics``), devices (``devices``), files written whole and the cache folder (``files``) and
child processes that die with their parent (``children``). ``cpu``, ``files`` and ``children``
import no torch: ``funcsac.accel.blas`` and ``threads`` use them before torch loads."""
