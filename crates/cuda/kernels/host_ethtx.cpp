// Host build of the raw-transaction path (keccak.cuh, rlp.cuh, ethtx.cuh) with secp256k1's
// recovery below it: build.rs compiles it with secp256k1's generated cs_curve.h. CI checks it
// against chainsig-eth's CPU path (alloy and libsecp256k1) on generated and broken transactions,
// record by record: the same fault, signing hash, key and address.
#define CS_ETHTX_RECOVERY 1
#include "host_layers.h"
#include "keccak.cuh"
#include "rlp.cuh"
#include "ethtx.cuh"

extern "C" {

// Keccak-256 of len bytes at data.
void cs_ethtx_keccak256(const u8* data, u32 len, u8* out) {
  ks_msg m;
  m.pre[0] = m.pre[1] = m.suf[0] = m.suf[1] = 0;
  m.pre_len = m.suf_len = 0;
  m.body = data;
  m.body_len = len;
  ks_keccak256(m, out);
}

// The address of the key (x, y), 8 little-endian words each.
void cs_ethtx_address(const u32* x, const u32* y, u8* out) { ks_eth_address(x, y, out); }

// Reads one record: its fault (ETH_*) and for ETH_OK, in out, the signing hash, r and s (8
// little-endian words each) and the parity: 25 words.
u32 cs_ethtx_parse(const u8* record, u64 len, u32* out) {
  eth_sig sig;
  const u32 fault = eth_parse(record, len, sig);
  if (fault != ETH_OK) return fault;
  for (int k = 0; k < 8; k++) {
    out[k] = sig.digest[k];
    out[8 + k] = sig.r[k];
    out[16 + k] = sig.s[k];
  }
  out[24] = sig.recid;
  return fault;
}

// One record through to its sender with secp256k1's table of G (gtab): the fault and for ETH_OK
// the address (20 bytes) and the key's x, y (16 words).
u32 cs_ethtx_recover(const u8* record, u64 len, const u32* gtab, u8* address, u32* key) {
  apt Q;
  const u32 fault = eth_recover(record, len, true, gtab, Q, address);
  if (fault != ETH_OK) return fault;
  for (int k = 0; k < 8; k++) {
    key[k] = Q.x.v[k];
    key[8 + k] = Q.y.v[k];
  }
  return fault;
}
}
