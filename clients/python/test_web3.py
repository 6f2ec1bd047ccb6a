"""web3.py's HTTPProvider against `chainsig serve`: what a Python dapp or script calls, each
answer checked against eth-account signing with the same key."""

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_utils import to_checksum_address

from chainsig_clients import ADDRESSES, KEYS

ALICE, BOB = ADDRESSES["alice"], ADDRESSES["bob"]
TO = to_checksum_address("0x" + "d0" * 19 + "0e")

# The EIP-712 specification's own example, with nested structs and an array added.
MAIL = {
    "types": {
        "EIP712Domain": [
            {"name": "name", "type": "string"},
            {"name": "version", "type": "string"},
            {"name": "chainId", "type": "uint256"},
            {"name": "verifyingContract", "type": "address"},
        ],
        "Person": [{"name": "name", "type": "string"}, {"name": "wallets", "type": "address[]"}],
        "Mail": [
            {"name": "from", "type": "Person"},
            {"name": "to", "type": "Person[]"},
            {"name": "contents", "type": "string"},
            {"name": "amount", "type": "uint256"},
            {"name": "delta", "type": "int64"},
            {"name": "seal", "type": "bytes32"},
            {"name": "note", "type": "bytes"},
            {"name": "urgent", "type": "bool"},
        ],
    },
    "primaryType": "Mail",
    "domain": {
        "name": "Ether Mail",
        "version": "1",
        "chainId": 1,
        "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
    },
    "message": {
        "from": {"name": "Cow", "wallets": ["0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"]},
        "to": [
            {"name": "Bob", "wallets": []},
            {"name": "Carol", "wallets": [ALICE.lower(), BOB]},
        ],
        "contents": "Hello, Bob! ✉",
        "amount": 10**30,
        "delta": -12345,
        "seal": "0x" + "ab" * 32,
        "note": "0x00ff",
        "urgent": True,
    },
}


def transactions(chain_id: int):
    """One transaction of each type web3.py can send, as eth-account takes it."""
    auth = Account.sign_authorization(
        {"chainId": chain_id, "address": TO, "nonce": 7}, KEYS["bob"]
    )
    common = {"chainId": chain_id, "nonce": 5, "gas": 90_000, "to": TO, "value": 10**18,
              "data": b"\x01\x02\x03"}
    access = [{"address": TO, "storageKeys": ["0x" + "00" * 31 + "01"]}]
    fees = {"maxFeePerGas": 3 * 10**10, "maxPriorityFeePerGas": 10**9}
    return {
        0: {**common, "gasPrice": 2 * 10**10},
        1: {**common, "type": 1, "gasPrice": 2 * 10**10, "accessList": access},
        2: {**common, "type": 2, **fees, "accessList": access},
        3: {**common, "type": 3, **fees, "accessList": [], "maxFeePerBlobGas": 10**9,
            "blobVersionedHashes": ["0x01" + "11" * 31, "0x01" + "22" * 31]},
        4: {**common, "type": 4, **fees, "accessList": [], "authorizationList": [
            {"chainId": auth.chain_id, "address": to_checksum_address(bytes(auth.address)),
             "nonce": auth.nonce, "yParity": auth.y_parity, "r": auth.r, "s": auth.s}]},
    }


def test_connected(w3):
    assert w3.is_connected()


def test_accounts(w3):
    assert sorted(w3.eth.accounts) == sorted([ALICE, BOB])


def test_chain_id(w3, chain_id):
    assert w3.eth.chain_id == chain_id
    assert w3.net.version == str(chain_id)


def test_client_version(w3):
    assert w3.client_version.startswith("chainsig/")


@pytest.mark.parametrize("tx_type", [0, 1, 2, 3, 4])
def test_sign_transaction(w3, chain_id, tx_type):
    tx = transactions(chain_id)[tx_type]
    expected = Account.sign_transaction(tx, KEYS["alice"])
    signed = w3.eth.sign_transaction({**tx, "from": ALICE})
    assert signed["raw"] == expected.raw_transaction
    # The decoded transaction, as geth reports it.
    assert signed["tx"]["hash"] == expected.hash
    assert signed["tx"]["from"] == ALICE
    assert signed["tx"]["nonce"] == tx["nonce"]
    assert signed["tx"]["value"] == tx["value"]
    assert signed["tx"]["r"] == expected.r.to_bytes(32, "big")
    assert signed["tx"]["s"] == expected.s.to_bytes(32, "big")
    assert signed["tx"]["v"] == expected.v
    assert signed["tx"]["type"] == tx_type


def test_sign_transaction_other_key(w3, chain_id):
    tx = transactions(chain_id)[2]
    signed = w3.eth.sign_transaction({**tx, "from": BOB})
    assert signed["raw"] == Account.sign_transaction(tx, KEYS["bob"]).raw_transaction


def test_sign_transaction_contract_creation(w3, chain_id):
    tx = {**transactions(chain_id)[2], "data": b"\x60\x00" * 40}
    del tx["to"]
    signed = w3.eth.sign_transaction({**tx, "from": ALICE})
    assert signed["raw"] == Account.sign_transaction(tx, KEYS["alice"]).raw_transaction
    assert signed["tx"]["to"] is None


@pytest.mark.parametrize("data", [b"", b"hello", bytes(range(256))])
def test_eth_sign(w3, data):
    expected = Account.sign_message(encode_defunct(primitive=data), KEYS["alice"]).signature
    assert w3.eth.sign(ALICE, data) == expected
    assert w3.eth.sign(ALICE, text=data.hex()) == Account.sign_message(
        encode_defunct(text=data.hex()), KEYS["alice"]
    ).signature


def test_sign_typed_data(w3):
    expected = Account.sign_message(encode_typed_data(full_message=MAIL), KEYS["bob"]).signature
    assert w3.eth.sign_typed_data(BOB, MAIL) == expected
