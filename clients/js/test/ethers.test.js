// ethers v6 against `chainsig serve`: JsonRpcProvider + JsonRpcSigner, each signature checked
// against eth-account's (the fixtures) and, as a second reference, ethers' own Wallet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonRpcProvider, Wallet, getBytes } from 'ethers';
import { fixtures, url, rawOf, shapeOf, nameOf } from '../fixtures.js';

const provider = new JsonRpcProvider(url);
const wallet = new Wallet(fixtures.key);

/** eth-account's transaction fields as an ethers TransactionRequest. */
function ethersTx(tx) {
  const out = {
    type: tx.type === undefined ? 0 : Number(tx.type),
    chainId: tx.chainId,
    nonce: Number(tx.nonce),
    gasLimit: tx.gas,
    to: tx.to ?? null,
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
      chainId: a.chainId,
      nonce: a.nonce,
      signature: { r: '0x' + a.r.toString(16).padStart(64, '0'),
        s: '0x' + a.s.toString(16).padStart(64, '0'), yParity: Number(a.yParity) },
    }));
  }
  return out;
}

test('ethers: network and accounts', async () => {
  const network = await provider.getNetwork();
  assert.equal(network.chainId, BigInt(fixtures.chainId));
  const accounts = (await provider.listAccounts()).map((s) => s.address).sort();
  assert.deepEqual(accounts, fixtures.accounts);
});

for (const entry of fixtures.transactions) {
  test(`ethers: signTransaction, ${nameOf(entry)}`, async (t) => {
    const signer = await provider.getSigner(fixtures.account);
    const tx = ethersTx(entry.tx);
    // The second reference agrees with the first before the server is asked.
    assert.equal(await wallet.signTransaction(tx), entry.raw, 'ethers Wallet vs eth-account');
    if (tx.type === 3 && provider.getRpcTransaction(tx).maxFeePerBlobGas === undefined) {
      // ethers 6 leaves maxFeePerBlobGas out of the request it sends (getRpcTransaction), so
      // a blob transaction cannot be signed remotely; the server must refuse the incomplete
      // request, naming the field, rather than sign one with a fee the user never chose.
      await assert.rejects(signer.signTransaction(tx), (e) => {
        assert.match(JSON.stringify(e.error ?? e.message), /maxFeePerBlobGas/);
        return true;
      });
      t.diagnostic('ethers sent no maxFeePerBlobGas; the server refused, naming it');
      return;
    }
    const answer = await signer.signTransaction(tx);
    t.diagnostic(`JsonRpcSigner.signTransaction returned: ${shapeOf(answer)}`);
    assert.equal(rawOf(answer), entry.raw);
  });
}

for (const entry of fixtures.messages) {
  const label = entry.text !== undefined ? JSON.stringify(entry.text) : entry.hex.slice(0, 20);
  test(`ethers: signMessage ${label}`, async () => {
    const signer = await provider.getSigner(fixtures.account);
    const message = entry.text !== undefined ? entry.text : getBytes(entry.hex);
    assert.equal(await wallet.signMessage(message), entry.signature, 'Wallet vs eth-account');
    assert.equal(await signer.signMessage(message), entry.signature);
  });
}

test('ethers: signTypedData', async () => {
  const signer = await provider.getSigner(fixtures.account);
  for (const [i, entry] of fixtures.typedData.entries()) {
    const expected = entry.signature;
    assert.equal(await wallet.signTypedData(entry.domain, entry.types, entry.message), expected,
      `typed data ${i}: Wallet vs eth-account`);
    assert.equal(await signer.signTypedData(entry.domain, entry.types, entry.message), expected,
      `typed data ${i} (${entry.primaryType})`);
  }
});
