import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _cpu_hygiene():
    torch.set_flush_denormal(True)
