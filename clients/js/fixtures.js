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

/** The raw transaction out of an eth_signTransaction answer passed through by a library:
 *  geth answers {raw, tx}; a bare hex string is the other shape seen in the wild. */
export function rawOf(answer) {
  if (typeof answer === 'string') return answer;
  if (answer && typeof answer.raw === 'string') return answer.raw;
  throw new Error(`eth_signTransaction answer of unknown shape: ${JSON.stringify(answer)}`);
}

/** What shape the library handed back, for the report. */
export function shapeOf(answer) {
  if (typeof answer === 'string') return 'hex string';
  return `object with keys ${Object.keys(answer ?? {}).sort().join(',')}`;
}

export function nameOf(entry) {
  return entry.name ?? `type ${entry.type}`;
}
