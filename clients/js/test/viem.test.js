// viem against `chainsig serve`: a wallet client with a JSON-RPC account (the server holds the
// key), each signature checked against eth-account's (the fixtures) and viem's local account.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWalletClient, defineChain, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { fixtures, url, rawOf, shapeOf, nameOf } from '../fixtures.js';

const chain = defineChain({
  id: fixtures.chainId,
  name: 'chainsig test chain',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [url] } },
});
const client = createWalletClient({ account: fixtures.account, chain, transport: http(url) });
const local = privateKeyToAccount(fixtures.key);

const TYPES = ['legacy', 'eip2930', 'eip1559', 'eip4844', 'eip7702'];

/** eth-account's transaction fields as a viem transaction request. */
function viemTx(tx) {
  const out = {
    type: TYPES[tx.type === undefined ? 0 : Number(tx.type)],
    nonce: Number(tx.nonce),
    gas: tx.gas,
    to: tx.to,
    value: tx.value,
    data: tx.data,
  };
  for (const key of ['gasPrice', 'maxFeePerGas', 'maxPriorityFeePerGas', 'maxFeePerBlobGas',
    'accessList', 'blobVersionedHashes']) {
    if (tx[key] !== undefined) out[key] = tx[key];
  }
  if (tx.authorizationList) {
    out.authorizationList = tx.authorizationList.map((a) => ({
      address: a.address,
      chainId: Number(a.chainId),
      nonce: Number(a.nonce),
      r: '0x' + a.r.toString(16).padStart(64, '0'),
      s: '0x' + a.s.toString(16).padStart(64, '0'),
      yParity: Number(a.yParity),
    }));
  }
  return out;
}

test('viem: chain id and addresses', async () => {
  assert.equal(await client.getChainId(), fixtures.chainId);
  const addresses = (await client.getAddresses()).map((a) => a.toLowerCase()).sort();
  assert.deepEqual(addresses, fixtures.accounts.map((a) => a.toLowerCase()).sort());
});

for (const entry of fixtures.transactions) {
  test(`viem: signTransaction, ${nameOf(entry)}`, async (t) => {
    const tx = viemTx(entry.tx);
    const reference = await local.signTransaction({ ...tx, chainId: fixtures.chainId });
    assert.equal(reference, entry.raw, 'viem local account vs eth-account');
    const answer = await client.signTransaction(tx);
    t.diagnostic(`walletClient.signTransaction returned: ${shapeOf(answer)}`);
    assert.equal(rawOf(answer), entry.raw);
  });
}

for (const entry of fixtures.messages) {
  const label = entry.text !== undefined ? JSON.stringify(entry.text) : entry.hex.slice(0, 20);
  test(`viem: signMessage ${label}`, async () => {
    const message = entry.text !== undefined ? entry.text : { raw: entry.hex };
    assert.equal(await local.signMessage({ message }), entry.signature, 'local vs eth-account');
    assert.equal(await client.signMessage({ message }), entry.signature);
  });
}

test('viem: signTypedData', async () => {
  for (const [i, entry] of fixtures.typedData.entries()) {
    const request = { domain: entry.domain, types: entry.types, primaryType: entry.primaryType,
      message: entry.message };
    assert.equal(await local.signTypedData(request), entry.signature,
      `typed data ${i}: local vs eth-account`);
    assert.equal(await client.signTypedData(request), entry.signature,
      `typed data ${i} (${entry.primaryType})`);
  }
});
