// The expected answers, computed by eth-account (clients/python/write_fixtures.py), and the
// server's address. Integers arrive as "123n" text and are read back as BigInt, without loss.
import { readFileSync } from 'node:fs';

const path = process.env.CHAINSIG_FIXTURES;
export const url = process.env.CHAINSIG_URL;
if (!path || !url) {
  throw new Error('CHAINSIG_FIXTURES and CHAINSIG_URL must be set (clients/run.sh sets them)');
}

export const fixtures = JSON.parse(readFileSync(path, 'utf8'), (_key, value) =>
  typeof value === 'string' && /^-?\d+n$/.test(value) ? BigInt(value.slice(0, -1)) : value,
);

/** Set by run.sh when the server runs with `--sign-tx-result raw`: eth_signTransaction then
 *  answers the bare raw hex, the shape ethers and viem declare. */
export const expectRawString = process.env.CHAINSIG_SIGN_TX_RESULT === 'raw';

/** The raw transaction out of an eth_signTransaction answer, which both libraries pass through
 *  untouched: geth's `{raw, tx}` by default, the bare hex with `--sign-tx-result raw`. */
export function rawOf(answer) {
  if (expectRawString) {
    if (typeof answer === 'string') return answer;
    throw new Error(`expected a bare hex string, got ${JSON.stringify(answer)}`);
  }
  if (answer && typeof answer.raw === 'string' && typeof answer.tx === 'object') return answer.raw;
  throw new Error(`expected geth's {raw, tx}, got ${JSON.stringify(answer)}`);
}

/** What shape the library handed back, for the report. */
export function shapeOf(answer) {
  if (typeof answer === 'string') return 'hex string';
  return `object with keys ${Object.keys(answer ?? {}).sort().join(',')}`;
}

export function nameOf(entry) {
  return entry.name ?? `type ${entry.type}`;
}
