"""Writes the expected answers for the JavaScript suites, computed with eth-account.

`python write_fixtures.py OUT.json`: the accounts and their keys, the chain id, transactions of
every type with their signed raw bytes and hashes, messages with their EIP-191 signatures and
typed data with their EIP-712 signatures. Integers are written as decimal text ending in `n`
("1000n") so the JavaScript side can read them back as BigInt without loss.
"""

import json
import random
import sys

from eth_account import Account
from eth_account.messages import encode_defunct, encode_typed_data
from eth_utils import to_checksum_address

from chainsig_clients import ADDRESSES, KEYS, server_chain_id
from random_inputs import random_typed_data
from test_web3 import MAIL, transactions


def bigints(value):
    """Every integer (not bool) as "123n"; bytes as 0x-hex."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return f"{value}n"
    if isinstance(value, bytes):
        return "0x" + value.hex()
    if isinstance(value, dict):
        return {k: bigints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [bigints(v) for v in value]
    raise TypeError(f"cannot write {value!r}")


def main(out_path: str) -> None:
    chain_id = server_chain_id()
    key = KEYS["alice"]
    txs = []
    for tx_type, tx in transactions(chain_id).items():
        signed = Account.sign_transaction(tx, key)
        txs.append({"type": tx_type, "tx": bigints(tx),
                    "raw": "0x" + signed.raw_transaction.hex(), "hash": "0x" + signed.hash.hex()})
    contract = {**transactions(chain_id)[2], "data": b"\x60\x00" * 40}
    del contract["to"]
    signed = Account.sign_transaction(contract, key)
    txs.append({"type": 2, "name": "contract creation", "tx": bigints(contract),
                "raw": "0x" + signed.raw_transaction.hex(), "hash": "0x" + signed.hash.hex()})

    messages = []
    for text in ("hello", "", "ünïcødé ✓", "0x1234"):
        sig = Account.sign_message(encode_defunct(text=text), key).signature
        messages.append({"text": text, "signature": "0x" + sig.hex()})
    for data in (b"\x00\x01\x02\xff", bytes(range(256))):
        sig = Account.sign_message(encode_defunct(primitive=data), key).signature
        messages.append({"hex": "0x" + data.hex(), "signature": "0x" + sig.hex()})

    typed = []
    rng = random.Random(712)
    samples = [MAIL] + [random_typed_data(rng, chain_id)[0] for _ in range(40)]
    for data in samples:
        sig = Account.sign_message(encode_typed_data(full_message=data), key).signature
        types = {k: v for k, v in data["types"].items() if k != "EIP712Domain"}
        typed.append({"domain": bigints(data["domain"]), "types": types,
                      "primaryType": data["primaryType"], "message": bigints(data["message"]),
                      "signature": "0x" + sig.hex()})

    fixtures = {
        "chainId": chain_id,
        "account": ADDRESSES["alice"],
        "key": key,
        "accounts": sorted(ADDRESSES.values()),
        "transactions": txs,
        "messages": messages,
        "typedData": typed,
    }
    with open(out_path, "w") as f:
        json.dump(fixtures, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: write_fixtures.py OUT.json")
    main(sys.argv[1])
