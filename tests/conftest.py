"""Shared fixtures."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Tiny tensors: on a busy 2-core machine a second OpenMP thread only adds waiting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
