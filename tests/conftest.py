import os

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # workers of pytest -n share the machine's cores: one thread each (torch reads this when it
    # is first imported, after this file; subprocesses of a test inherit it)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True)
def _threads_kept():
    """Each test leaves torch's intra-op thread count as it found it: compile store keys and
    dynamo's guards hold the count, so a test that changed it would fail a later one instead."""
    import torch

    threads = torch.get_num_threads()
    yield
    left = torch.get_num_threads()
    if left != threads:
        torch.set_num_threads(threads)
        pytest.fail(f"the test left torch's intra-op threads at {left}; it found {threads}")


@pytest.fixture(autouse=True, scope="session")
def _empty_compile_store(tmp_path_factory):
    """Every test session starts with an empty compile store (subprocesses inherit it)."""
    saved = os.environ.get("FUNCSAC_COMPILE_STORE")
    os.environ["FUNCSAC_COMPILE_STORE"] = str(tmp_path_factory.mktemp("compile_store"))
    yield
    if saved is None:
        del os.environ["FUNCSAC_COMPILE_STORE"]
    else:
        os.environ["FUNCSAC_COMPILE_STORE"] = saved
