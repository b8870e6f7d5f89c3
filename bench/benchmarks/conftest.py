import bench.common.mkl_as_command  # noqa: F401  first: MKL's kernels as the funcsac command picks them
import os

import pytest

import funcsac  # before torch, as funcsac train: MKL's kernels (funcsac.accel.blas)
import torch  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", help="device the benchmarks run on (cpu, cuda)")
    parser.addoption("--slow-compiles", action="store_true",
                     help="also run variants whose cold compile takes minutes (unrolled UTD)")


@pytest.fixture(scope="session")
def device(request):
    dev = torch.device(request.config.getoption("--device"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        pytest.skip("--device cuda without a CUDA device")
    return dev


@pytest.fixture(autouse=True, scope="session")
def _cpu_hygiene():
    torch.set_flush_denormal(True)
    funcsac.reuse_freed_memory()  # as the driver's run
    # the compile store goes in inductor's cache folder, which cold-compile measurements empty
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    os.environ["FUNCSAC_COMPILE_STORE"] = os.path.join(cache_dir(), "funcsac")
