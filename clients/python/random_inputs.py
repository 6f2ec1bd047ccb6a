"""Random transactions and EIP-712 messages, each as the JSON a client sends to the server and as
the input eth-account signs, so the two signatures can be compared byte for byte.

Numbers are drawn with a bias toward the edges (0, 1, the type's maximum, powers of two and their
neighbours), where length-prefix and leading-zero mistakes in RLP and ABI encoding show up. Each
quantity in a request is written either as a 0x-hex string or as an exact JSON integer, at random,
since clients send both.
"""

import random

from eth_account import Account
from eth_utils import to_checksum_address

U64 = 2**64 - 1
U128 = 2**128 - 1
U256 = 2**256 - 1
# EIP-2681: a nonce is below 2^64 - 1.
NONCE_MAX = 2**64 - 2


def edgy_int(rng: random.Random, high: int, low: int = 0) -> int:
    """An integer in [low, high], often at a boundary."""
    roll = rng.random()
    if roll < 0.1:
        return low
    if roll < 0.2:
        return high
    if roll < 0.45:
        bits = rng.randint(0, max(high.bit_length() - 1, 0))
        value = 2**bits + rng.choice((-1, 0, 1))
        return min(max(value, low), high)
    if roll < 0.7:
        return rng.randint(low, min(high, low + 2 ** rng.randint(1, 40)))
    return rng.randint(low, high)


def random_bytes(rng: random.Random, n: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(n))


def random_address(rng: random.Random) -> str:
    return "0x" + random_bytes(rng, 20).hex()


def quantity(rng: random.Random, value: int):
    """A quantity as clients write it: 0x-hex (no leading zeros) or a JSON integer."""
    return hex(value) if rng.random() < 0.5 else value


def mixed_case_address(rng: random.Random, address: str) -> str:
    """Lower case, or EIP-55 checksummed: both are what clients send."""
    return to_checksum_address(address) if rng.random() < 0.5 else address.lower()


def random_access_list(rng: random.Random):
    entries = []
    for _ in range(rng.choice((0, 0, 1, 2, 3))):
        keys = ["0x" + random_bytes(rng, 32).hex() for _ in range(rng.choice((0, 1, 2, 3)))]
        entries.append({"address": random_address(rng), "storageKeys": keys})
    return entries


def random_authorization(rng: random.Random, chain_id: int):
    """An EIP-7702 authorization signed by eth-account with a fresh random key."""
    key = random_bytes(rng, 31) + b"\x01"
    # Chain 0 (valid on every chain) is left out: the server refuses it by default (see
    # test_rpc_quantities.py); any other chain id up to 2^256 - 1 is allowed.
    auth_chain = rng.choice((chain_id, 1, edgy_int(rng, U64, 1), edgy_int(rng, U256, 1)))
    signed = Account.sign_authorization(
        {"chainId": auth_chain, "address": random_address(rng), "nonce": edgy_int(rng, NONCE_MAX)},
        key,
    )
    return signed


def authorization_json(rng: random.Random, signed) -> dict:
    """geth's SetCodeAuthorization JSON: every number a quantity (r and s too)."""
    return {
        "chainId": quantity(rng, signed.chain_id),
        "address": mixed_case_address(rng, "0x" + bytes(signed.address).hex()),
        "nonce": quantity(rng, signed.nonce),
        "yParity": quantity(rng, signed.y_parity),
        "r": quantity(rng, signed.r),
        "s": quantity(rng, signed.s),
    }


def random_transaction(rng: random.Random, tx_type: int, chain_id: int, sender: str):
    """(request JSON for eth_signTransaction, eth-account transaction dict)."""
    nonce = edgy_int(rng, NONCE_MAX)
    gas = edgy_int(rng, U64)
    value = edgy_int(rng, U256)
    data = random_bytes(rng, rng.choice((0, 0, 1, 4, 32, 55, 56, rng.randint(0, 600))))
    # Types 3 and 4 cannot create contracts.
    to = None if tx_type < 3 and rng.random() < 0.2 else random_address(rng)

    ours = {"type": tx_type, "chainId": chain_id, "nonce": nonce, "gas": gas, "value": value,
            "data": data}
    request = {
        "from": mixed_case_address(rng, sender),
        "type": quantity(rng, tx_type),
        "chainId": quantity(rng, chain_id),
        "nonce": quantity(rng, nonce),
        "gas": quantity(rng, gas),
        "value": quantity(rng, value),
    }
    request["input" if rng.random() < 0.5 else "data"] = "0x" + data.hex()
    if to is not None:
        ours["to"] = to_checksum_address(to)
        request["to"] = mixed_case_address(rng, to)
    if tx_type in (0, 1):
        gas_price = edgy_int(rng, U128)
        ours["gasPrice"] = gas_price
        request["gasPrice"] = quantity(rng, gas_price)
    else:
        max_fee = edgy_int(rng, U128)
        priority = edgy_int(rng, max_fee)
        ours["maxFeePerGas"] = max_fee
        ours["maxPriorityFeePerGas"] = priority
        request["maxFeePerGas"] = quantity(rng, max_fee)
        request["maxPriorityFeePerGas"] = quantity(rng, priority)
    if tx_type >= 1:
        access_list = random_access_list(rng)
        ours["accessList"] = access_list
        request["accessList"] = [
            {"address": mixed_case_address(rng, e["address"]), "storageKeys": e["storageKeys"]}
            for e in access_list
        ]
    if tx_type == 3:
        blob_fee = edgy_int(rng, U128)
        hashes = ["0x01" + random_bytes(rng, 31).hex() for _ in range(rng.randint(1, 6))]
        ours["maxFeePerBlobGas"] = blob_fee
        ours["blobVersionedHashes"] = hashes
        request["maxFeePerBlobGas"] = quantity(rng, blob_fee)
        request["blobVersionedHashes"] = hashes
    if tx_type == 4:
        auths = [random_authorization(rng, chain_id) for _ in range(rng.randint(1, 3))]
        ours["authorizationList"] = auths
        request["authorizationList"] = [authorization_json(rng, a) for a in auths]
    if tx_type == 0:
        # eth-account knows a legacy transaction by its missing type.
        del ours["type"]
    if tx_type == 0 and rng.random() < 0.5:
        # Legacy requests often leave the type out.
        del request["type"]
    return request, ours


# --- EIP-712 ---------------------------------------------------------------------------------

DOMAIN_FIELDS = (
    ("name", "string"),
    ("version", "string"),
    ("chainId", "uint256"),
    ("verifyingContract", "address"),
    ("salt", "bytes32"),
)


def random_text(rng: random.Random) -> str:
    alphabet = "abcXYZ 019_-\"\\/\n\tédé中文🙂\u0000"
    return "".join(rng.choice(alphabet) for _ in range(rng.choice((0, 1, 5, rng.randint(0, 80)))))


def random_atomic_type(rng: random.Random) -> str:
    kind = rng.choice(("address", "bool", "bytes", "string", "bytesN", "uintN", "intN", "uintN"))
    if kind == "bytesN":
        return f"bytes{rng.randint(1, 32)}"
    if kind in ("uintN", "intN"):
        return f"{kind[:-1]}{8 * rng.randint(1, 32)}"
    return kind


def random_field_type(rng: random.Random, structs_after: list) -> str:
    base = rng.choice(structs_after) if structs_after and rng.random() < 0.3 else None
    base = base or random_atomic_type(rng)
    for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
        base += "[]" if rng.random() < 0.6 else f"[{rng.randint(1, 3)}]"
    return base


def random_types(rng: random.Random):
    """Struct definitions S0 (primary) .. Sn; a struct refers only to later ones, so there are
    no cycles, and a struct nobody reaches is left out (EIP-712 encodes only reachable types)."""
    count = rng.randint(1, 4)
    names = [f"S{i}{rng.choice(('', 'Mail', 'Person', 'Order'))}" for i in range(count)]
    types = {}
    for i, name in enumerate(names):
        fields = []
        for j in range(rng.randint(1, 6)):
            fields.append({"name": f"f{j}{rng.choice(('', 'x', 'amount'))}",
                           "type": random_field_type(rng, names[i + 1 :])})
        types[name] = fields
    reachable, todo = set(), [names[0]]
    while todo:
        name = todo.pop()
        if name in reachable:
            continue
        reachable.add(name)
        for field in types[name]:
            base = field["type"].split("[")[0]
            if base in types:
                todo.append(base)
    return names[0], {n: f for n, f in types.items() if n in reachable}


def random_value(rng: random.Random, field_type: str, types: dict):
    """(value as eth-account takes it, value as the request JSON carries it)."""
    if field_type.endswith("]"):
        inner, _, dim = field_type[:-1].rpartition("[")
        length = int(dim) if dim else rng.choice((0, 1, 2, 3))
        pairs = [random_value(rng, inner, types) for _ in range(length)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if field_type in types:
        ours, sent = {}, {}
        for field in types[field_type]:
            ours[field["name"]], sent[field["name"]] = random_value(rng, field["type"], types)
        return ours, sent
    if field_type == "address":
        address = random_address(rng)
        return address, mixed_case_address(rng, address)
    if field_type == "bool":
        flag = rng.random() < 0.5
        return flag, flag
    if field_type == "string":
        text = random_text(rng)
        return text, text
    if field_type == "bytes":
        data = "0x" + random_bytes(rng, rng.choice((0, 1, 31, 32, 33, rng.randint(0, 100)))).hex()
        return data, data
    if field_type.startswith("bytes"):
        data = "0x" + random_bytes(rng, int(field_type[5:])).hex()
        return data, data
    bits = int(field_type.lstrip("uint"))
    if field_type.startswith("u"):
        number = edgy_int(rng, 2**bits - 1)
    else:
        number = edgy_int(rng, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)))
    # A JSON integer or a 0x-hex string (for non-negative numbers), as clients send them.
    sent = hex(number) if number >= 0 and rng.random() < 0.4 else number
    return number, sent


def random_typed_data(rng: random.Random, chain_id: int):
    """(typed data for eth-account's encode_typed_data, typed data JSON for the server)."""
    primary, types = random_types(rng)
    domain_fields = [f for f in DOMAIN_FIELDS if rng.random() < 0.6] or [DOMAIN_FIELDS[0]]
    domain_ours, domain_sent = {}, {}
    for name, field_type in domain_fields:
        if name == "chainId":
            domain_ours[name] = domain_sent[name] = rng.choice((chain_id, edgy_int(rng, U64)))
        else:
            domain_ours[name], domain_sent[name] = random_value(rng, field_type, types)
    message_ours, message_sent = random_value(rng, primary, types)
    all_types = {"EIP712Domain": [{"name": n, "type": t} for n, t in domain_fields], **types}
    ours = {"types": all_types, "primaryType": primary, "domain": domain_ours,
            "message": message_ours}
    sent = {"types": all_types, "primaryType": primary, "domain": domain_sent,
            "message": message_sent}
    return ours, sent
