import os

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # workers of pytest -n share the machine's cores: one thread each (torch reads this when it
    # is first imported, after this file; subprocesses of a test inherit it)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


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
