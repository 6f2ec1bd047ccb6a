"""How quantities are read at the JSON-RPC level: 0x-hex and exact JSON integers are taken as
they are; decimal strings (which could be misread as hex) and values out of range are refused
with -32602 naming the field, never reinterpreted."""

import pytest
from eth_account import Account
from eth_utils import to_checksum_address

from chainsig_clients import ADDRESSES, KEYS, call_raw, post_text

ALICE = ADDRESSES["alice"]
TO = "0x" + "5a" * 20


def base_tx(chain_id):
    return {"from": ALICE, "type": "0x2", "chainId": hex(chain_id), "nonce": "0x0",
            "gas": "0x5208", "maxFeePerGas": "0x3b9aca00", "maxPriorityFeePerGas": "0x1",
            "to": TO, "value": "0x0"}


def expected_raw(chain_id, **changes):
    tx = {"type": 2, "chainId": chain_id, "nonce": 0, "gas": 21000, "maxFeePerGas": 10**9,
          "maxPriorityFeePerGas": 1, "to": to_checksum_address(TO), "value": 0, **changes}
    return "0x" + Account.sign_transaction(tx, KEYS["alice"]).raw_transaction.hex()


def assert_refused(answer, field):
    assert "error" in answer, f"expected a refusal naming {field}, got {answer}"
    assert answer["error"]["code"] == -32602, answer
    assert field in answer["error"]["message"], answer


@pytest.mark.parametrize(
    "field,value",
    [("value", "1000000000000000000"), ("nonce", "10"), ("gas", "21000"),
     ("maxFeePerGas", "1000000000"), ("chainId", "1")],
)
def test_decimal_strings_refused(chain_id, field, value):
    answer = call_raw("eth_signTransaction", [{**base_tx(chain_id), field: value}])
    assert_refused(answer, field)


def test_fractional_number_refused(chain_id):
    answer = call_raw("eth_signTransaction", [{**base_tx(chain_id), "gas": 21000.5}])
    assert_refused(answer, "gas")


def test_big_json_integer_exact(chain_id):
    # Written by hand: 10^20 is beyond a double's exact range, so a parser through f64 would
    # change it; the signature shows whether the server read it exactly.
    text = (
        '{"jsonrpc":"2.0","id":1,"method":"eth_signTransaction","params":[{'
        f'"from":"{ALICE}","type":2,"chainId":{chain_id},"nonce":0,"gas":21000,'
        f'"maxFeePerGas":1000000000,"maxPriorityFeePerGas":1,"to":"{TO}",'
        '"value":100000000000000000000}]}'
    )
    answer = post_text(text)
    assert "result" in answer, answer
    assert answer["result"]["raw"] == expected_raw(chain_id, value=10**20)


def test_largest_value_accepted(chain_id):
    answer = call_raw("eth_signTransaction", [{**base_tx(chain_id), "value": 2**256 - 1}])
    assert answer["result"]["raw"] == expected_raw(chain_id, value=2**256 - 1)


@pytest.mark.parametrize("value", [2**256, hex(2**256)])
def test_value_beyond_256_bits_refused(chain_id, value):
    answer = call_raw("eth_signTransaction", [{**base_tx(chain_id), "value": value}])
    assert_refused(answer, "value")


def test_negative_refused(chain_id):
    answer = call_raw("eth_signTransaction", [{**base_tx(chain_id), "nonce": -1}])
    assert_refused(answer, "nonce")


def test_missing_chain_id_is_the_servers(chain_id):
    # geth fills a missing chainId with its own chain's; web3.py's sign_transaction relies on it.
    tx = base_tx(chain_id)
    del tx["chainId"]
    answer = call_raw("eth_signTransaction", [tx])
    assert answer["result"]["raw"] == expected_raw(chain_id)


def test_authorization_decimal_string_refused():
    answer = call_raw("chainsig_signAuthorization",
                      [ALICE, {"chainId": "1", "address": TO, "nonce": 0}])
    assert_refused(answer, "chainId")


def test_typed_data_decimal_strings_accepted():
    # EIP-712 values are not transaction quantities: ethers 6 (TypedDataEncoder.getPayload) and
    # viem (bigints stringified) send every intN/uintN in the message as decimal text, as
    # MetaMask's eth_signTypedData_v4 accepts. They must be read as the numbers they spell.
    from eth_account.messages import encode_typed_data

    from test_web3 import MAIL

    expected = Account.sign_message(encode_typed_data(full_message=MAIL), KEYS["alice"])
    sent = {**MAIL, "message": {**MAIL["message"], "amount": str(MAIL["message"]["amount"]),
                                "delta": str(MAIL["message"]["delta"])}}
    for method in ("eth_signTypedData_v4", "eth_signTypedData"):
        answer = call_raw(method, [ALICE, sent])
        assert answer.get("result") == "0x" + expected.signature.hex(), (method, answer)


@pytest.mark.parametrize(
    "field_type,value",
    [("uint8", 256), ("uint8", -1), ("int8", 128), ("int8", -129), ("uint256", 2**256),
     ("uint64", "0x10000000000000000"), ("bytes4", "0x0102030405"), ("address", "0x1234"),
     ("bool", "yes")],
)
def test_typed_data_out_of_range_refused(field_type, value):
    # A value that does not fit its EIP-712 type is refused, never truncated or wrapped.
    typed = {
        "types": {"EIP712Domain": [{"name": "name", "type": "string"}],
                  "Item": [{"name": "field", "type": field_type}]},
        "primaryType": "Item",
        "domain": {"name": "range check"},
        "message": {"field": value},
    }
    answer = call_raw("eth_signTypedData_v4", [ALICE, typed])
    assert "error" in answer and answer["error"]["code"] == -32602, answer


def test_other_chain_refused(chain_id):
    answer = call_raw("eth_signTransaction", [{**base_tx(chain_id), "chainId": hex(chain_id + 1)}])
    assert_refused(answer, "chainId")


def test_authorization_for_every_chain_refused():
    # EIP-7702: an authorization for chain id 0 is valid on every chain; refused by default.
    answer = call_raw("chainsig_signAuthorization",
                      [ALICE, {"chainId": "0x0", "address": TO, "nonce": 0}])
    assert_refused(answer, "chainId")


@pytest.mark.parametrize("value", [2**64, 10**30, 2**256 - 1, -(2**100)])
def test_typed_data_big_json_integers(value):
    # web3.py writes Python ints as JSON integers; one beyond 64 bits is as exact as a small one.
    from eth_account.messages import encode_typed_data

    field_type = "int256" if value < 0 else "uint256"
    typed = {
        "types": {"EIP712Domain": [{"name": "name", "type": "string"}],
                  "Item": [{"name": "field", "type": field_type}]},
        "primaryType": "Item",
        "domain": {"name": "big integers"},
        "message": {"field": value},
    }
    expected = Account.sign_message(encode_typed_data(full_message=typed), KEYS["alice"])
    answer = call_raw("eth_signTypedData_v4", [ALICE, typed])
    assert answer.get("result") == "0x" + expected.signature.hex(), answer
