"""A process's own peak resident memory (imports no torch: a child reads it before its clock)."""


def peak_rss_mib() -> float:
    """This process's own peak resident memory in MiB: /proc's ``VmHWM`` on Linux (``ru_maxrss``
    keeps a parent's peak across fork and exec), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as status:
            return int(status.read().split("VmHWM:")[1].split()[0]) / 1024
    except (OSError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
