"""pytest fixtures: the server under test (CHAINSIG_URL, CHAINSIG_CHAIN_ID; run.sh sets both)."""

import os

import pytest
from web3 import Web3

from chainsig_clients import server_chain_id, server_url


def pytest_configure(config):
    if "CHAINSIG_URL" not in os.environ:
        raise pytest.UsageError("CHAINSIG_URL is not set: start `chainsig serve` (clients/run.sh does)")


@pytest.fixture(scope="session")
def w3() -> Web3:
    return Web3(Web3.HTTPProvider(server_url(), request_kwargs={"timeout": 60}))


@pytest.fixture(scope="session")
def chain_id() -> int:
    return server_chain_id()
