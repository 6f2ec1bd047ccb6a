"""Shared pieces of the client suites: the fixed test keys, the server's address and a plain
JSON-RPC client.

The keys are fixed (derived from a label by Keccak-256) so the Python and JavaScript suites and
`run.sh`, which turns them into keystores for `chainsig serve`, agree on them without passing
secrets around. They are test keys: never fund them.

`python chainsig_clients.py write-keys DIR` writes DIR/NAME.key (hex) and DIR/NAME.pass for
`chainsig eth keystore-encrypt`.
"""

import itertools
import json
import os
import sys
import urllib.request

from eth_account import Account
from eth_utils import keccak

KEY_LABELS = ("alice", "bob")
KEYS = {name: "0x" + keccak(text=f"chainsig client test key {name}").hex() for name in KEY_LABELS}
ADDRESSES = {name: Account.from_key(key).address for name, key in KEYS.items()}
KEY_BY_ADDRESS = {ADDRESSES[name].lower(): KEYS[name] for name in KEY_LABELS}


def server_url() -> str:
    return os.environ.get("CHAINSIG_URL", "http://127.0.0.1:8545")


def server_chain_id() -> int:
    return int(os.environ.get("CHAINSIG_CHAIN_ID", "11155111"))


class RpcError(Exception):
    """A JSON-RPC error object returned by the server."""

    def __init__(self, error: dict):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")


_ids = itertools.count(1)


def post(body) -> object:
    """POSTs a JSON body to the server and returns the decoded answer."""
    request = urllib.request.Request(
        server_url(),
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def post_text(text: str) -> object:
    """POSTs raw JSON text (for integers Python's json would not write as given)."""
    request = urllib.request.Request(
        server_url(), data=text.encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def call_raw(method: str, params: list) -> dict:
    """One call; the whole response object (result or error)."""
    return post({"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params})


def call(method: str, params: list):
    """One call; the result, or RpcError."""
    answer = call_raw(method, params)
    if "error" in answer:
        raise RpcError(answer["error"])
    return answer["result"]


def batch(calls: list, chunk: int = 500) -> list:
    """Many calls as JSON-RPC batches; one response object per call, in the calls' order
    (matched by id, since a batch's answers may come in any order)."""
    out = []
    for start in range(0, len(calls), chunk):
        part = calls[start : start + chunk]
        requests = [
            {"jsonrpc": "2.0", "id": start + i, "method": m, "params": p}
            for i, (m, p) in enumerate(part)
        ]
        answers = post(requests)
        assert isinstance(answers, list) and len(answers) == len(part), answers
        by_id = {a["id"]: a for a in answers}
        out.extend(by_id[start + i] for i in range(len(part)))
    return out


def write_keys(directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, key in KEYS.items():
        with open(os.path.join(directory, f"{name}.key"), "w") as f:
            f.write(key[2:] + "\n")
        with open(os.path.join(directory, f"{name}.pass"), "w") as f:
            f.write(f"password of {name}\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write-keys":
        write_keys(sys.argv[2])
    else:
        sys.exit("usage: chainsig_clients.py write-keys DIR")
