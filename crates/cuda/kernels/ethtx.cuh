// Raw signed Ethereum transactions to senders, one thread per record: the envelope read and
// checked (rlp.cuh), the signing payload rebuilt and hashed (keccak.cuh), the key recovered
// (ecdsa.cuh's cs_recover_ecdsa, the warp sharing its inversions) and the address taken from it.
//
// Envelopes (EIP-2718): a first byte of 0x80 or more is a legacy transaction, the RLP list
// [nonce, gasPrice, gas, to, value, data, v, r, s]; a first byte 0x01-0x04 is a typed one,
// type || rlp([fields..., y_parity, r, s]) with the fields of EIP-2930 (chainId, nonce, gasPrice,
// gas, to, value, data, accessList), EIP-1559 (chainId, nonce, maxPriorityFeePerGas,
// maxFeePerGas, gas, to, value, data, accessList), EIP-4844 (EIP-1559's, `to` required, then
// maxFeePerBlobGas and blobVersionedHashes) and EIP-7702 (EIP-1559's, `to` required, then
// authorizationList). Type 0x00 and 0x05-0x7f are refused.
//
// Signing payloads: a typed transaction signs type || rlp([fields...]), the list without its
// last three items, its header re-encoded for the shorter payload. A legacy one signs
// rlp([6 fields]) when v is 27 or 28 and, under EIP-155, rlp([6 fields, chainId, 0, 0]) where
// v = 35 + 2 chainId + parity. RLP is canonical here (rlp.cuh refuses any other form), so the
// fields as they arrived are their re-encoding and only list headers are built anew.
//
// Faults: the numbers of chainsig_eth::rawtx::TxFault, checked in the order the CPU path's
// decoder (alloy) meets them, so a record with two faults reports the same one on both paths:
// the envelope front to back (a bad v is found where v is read, before r and s), the list's
// length, trailing bytes, then s above n/2 (EIP-2), r and s in [1, n), and the recovery. A blob
// transaction in its network form (a sidecar after the transaction, which alloy also accepts) is
// left to the host: ETH_DEFER.
//
// Bounds: records of any length (above ETH_MAX_TX_LEN refused unread); every read is inside the
// record. Assumes: keccak.cuh and rlp.cuh; eth_recover (the host build's whole path, defined
// with CS_ETHTX_RECOVERY) also every layer of a secp256k1 ECDSA module (ecdsa.cuh and below).
// On the GPU the module holds no curve arithmetic: its kernels (at the end) feed the secp256k1
// module's recovery kernel and read its answers.
// Timing: variable; all inputs are public.
#pragma once

#define ETH_OK 0
#define ETH_EMPTY 1
#define ETH_TOO_LONG 2
#define ETH_UNSUPPORTED_TYPE 3
#define ETH_MALFORMED 4
#define ETH_TRAILING 5
#define ETH_BAD_V 6
#define ETH_HIGH_S 7
#define ETH_BAD_RS 8
#define ETH_NO_KEY 9
#define ETH_DEFER 10

// The largest record taken (chainsig_eth::rawtx::MAX_RAW_TX_LEN, geth's txMaxSize).
#define ETH_MAX_TX_LEN (128u * 1024u)

// What recovery needs from one record: the signing hash and r, s as 8 little-endian words each,
// and the parity of R's y.
struct eth_sig {
  u32 digest[8];
  u32 r[8];
  u32 s[8];
  u32 recid;
};

// Word k (little-endian order) of secp256k1's group order n and of n/2 (rounded down).
CS_FN u32 eth_order_word(int k) {
  switch (k) {
    case 0: return 0xd0364141u;
    case 1: return 0xbfd25e8cu;
    case 2: return 0xaf48a03bu;
    case 3: return 0xbaaedce6u;
    case 4: return 0xfffffffeu;
    default: return 0xffffffffu;
  }
}
CS_FN u32 eth_half_order_word(int k) {
  switch (k) {
    case 0: return 0x681b20a0u;
    case 1: return 0xdfe92f46u;
    case 2: return 0x57a4501du;
    case 3: return 0x5d576e73u;
    case 7: return 0x7fffffffu;
    default: return 0xffffffffu;
  }
}

// -1, 0 or 1 as a is below, equal to or above the constant `which` (0: n, 1: n/2).
CS_FN int eth_cmp(const u32 a[8], int which) {
#pragma unroll
  for (int k = 7; k >= 0; k--) {
    const u32 c = which == 0 ? eth_order_word(k) : eth_half_order_word(k);
    if (a[k] != c) return a[k] < c ? -1 : 1;
  }
  return 0;
}

CS_FN bool eth_is_zero(const u32 a[8]) {
  u32 acc = 0;
#pragma unroll
  for (int k = 0; k < 8; k++) acc |= a[k];
  return acc == 0;
}

// The integer in an item's payload (at most 32 bytes, big-endian) as 8 little-endian words;
// every index is fixed at compile time, so the words stay in registers on the GPU.
CS_FN void eth_load_uint(const u8* b, const rlp_item& it, u32 w[8]) {
  const u8* last = b + it.start + it.len - 1;  // the least significant byte
#pragma unroll
  for (int k = 0; k < 8; k++) {
    u32 word = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const u32 from_end = 4 * k + j;
      if (from_end < it.len) word |= (u32)last[-(int)from_end] << (8 * j);
    }
    w[k] = word;
  }
}

// The 32-byte big-endian hash as 8 little-endian words.
CS_FN void eth_hash_words(const u8 h[32], u32 w[8]) {
#pragma unroll
  for (int k = 0; k < 8; k++) {
    const int at = 28 - 4 * k;
    w[k] = ((u32)h[at] << 24) | ((u32)h[at + 1] << 16) | ((u32)h[at + 2] << 8) | h[at + 3];
  }
}

// The fields before the signature of a typed transaction of type ty, from pos; false when one
// is malformed.
CS_FN bool eth_typed_fields(const u8* b, u32& pos, u32 end, u32 ty) {
  if (!rlp_uint_at(b, pos, end, 8) || !rlp_uint_at(b, pos, end, 8)) return false;  // chain id, nonce
  if (ty == 1) {
    if (!rlp_uint_at(b, pos, end, 16)) return false;  // gasPrice
  } else if (!rlp_uint_at(b, pos, end, 16) || !rlp_uint_at(b, pos, end, 16)) {
    return false;  // maxPriorityFeePerGas, maxFeePerGas
  }
  if (!rlp_uint_at(b, pos, end, 8)) return false;  // gas
  if (ty <= 2 ? !rlp_to(b, pos, end) : !rlp_fixed(b, pos, end, 20)) return false;
  if (!rlp_uint_at(b, pos, end, 32) || !rlp_bytes(b, pos, end) || !rlp_access_list(b, pos, end))
    return false;  // value, data, accessList
  if (ty == 3)
    return rlp_uint_at(b, pos, end, 16) && rlp_fixed_list(b, pos, end, 32);
  if (ty == 4) return rlp_authorization_list(b, pos, end);
  return true;
}

// Reads record b of len bytes: its fault, or ETH_OK with the signing hash, r, s and parity in
// `out`. Recovery's own refusal (ETH_NO_KEY) is the caller's.
CS_FN u32 eth_parse(const u8* b, u64 len64, eth_sig& out) {
  if (len64 > ETH_MAX_TX_LEN) return ETH_TOO_LONG;
  if (len64 == 0) return ETH_EMPTY;
  const u32 len = (u32)len64;
  const u32 ty = b[0] < 0x80 ? b[0] : 0;
  if (b[0] < 0x80 && (ty == 0 || ty > 4)) return ETH_UNSUPPORTED_TYPE;
  u32 pos = ty ? 1 : 0;
  rlp_item outer;
  if (!rlp_list(b, pos, len, outer)) return ETH_MALFORMED;
  // The fields are read up to the record's end, not the list's (as alloy does); the list's
  // length is checked once they are all read.
  const u32 fields = outer.start;
  pos = fields;
  if (ty == 3) {
    rlp_item first;
    if (rlp_header(b, pos, len, first) && first.list) return ETH_DEFER;
  }
  u32 parity;
  u64 chain_id = 0;
  bool eip155 = false;
  u32 fields_end;
  if (ty == 0) {
    if (!rlp_uint_at(b, pos, len, 8) || !rlp_uint_at(b, pos, len, 16) ||
        !rlp_uint_at(b, pos, len, 8) || !rlp_to(b, pos, len) || !rlp_uint_at(b, pos, len, 32) ||
        !rlp_bytes(b, pos, len))
      return ETH_MALFORMED;
    fields_end = pos;
    rlp_item v;
    if (!rlp_uint(b, pos, len, 16, v)) return ETH_MALFORMED;
    u64 hi = 0, lo = 0;
    for (u32 i = 0; i < v.len; i++) {
      hi = (hi << 8) | (lo >> 56);
      lo = (lo << 8) | b[v.start + i];
    }
    if (hi == 0 && (lo == 27 || lo == 28)) {
      parity = (u32)(lo - 27);
    } else {
      // EIP-155: v = 35 + 2 chainId + parity with chainId a u64, so 35 <= v <= 2^65 + 34.
      if ((hi == 0 && lo < 35) || hi > 2 || (hi == 2 && lo > 34)) return ETH_BAD_V;
      const u64 borrow = lo < 35 ? 1 : 0;
      const u64 lo35 = lo - 35, hi35 = hi - borrow;
      parity = (u32)(lo35 & 1);
      chain_id = (hi35 << 63) | (lo35 >> 1);
      eip155 = true;
    }
  } else {
    if (!eth_typed_fields(b, pos, len, ty)) return ETH_MALFORMED;
    fields_end = pos;
    rlp_item y;
    if (!rlp_uint(b, pos, len, 1, y)) return ETH_MALFORMED;
    parity = y.len == 0 ? 0 : b[y.start];
    if (parity > 1) return ETH_BAD_V;
  }
  rlp_item r, s;
  if (!rlp_uint(b, pos, len, 32, r) || !rlp_uint(b, pos, len, 32, s)) return ETH_MALFORMED;
  if (pos != rlp_end(outer)) return ETH_MALFORMED;
  if (pos != len) return ETH_TRAILING;
  eth_load_uint(b, r, out.r);
  eth_load_uint(b, s, out.s);
  if (eth_cmp(out.s, 1) > 0) return ETH_HIGH_S;
  if (eth_is_zero(out.r) || eth_is_zero(out.s) || eth_cmp(out.r, 0) >= 0) return ETH_BAD_RS;
  out.recid = parity;
  // The signing payload: a new list header (and the type byte), the fields as they are, and for
  // EIP-155 rlp(chainId) 0x80 0x80.
  ks_msg m;
  m.pre[0] = m.pre[1] = m.suf[0] = m.suf[1] = 0;
  m.pre_len = m.suf_len = 0;
  m.body = b + fields;
  m.body_len = fields_end - fields;
  if (eip155) {
    rlp_pack_uint(m.suf, &m.suf_len, chain_id);
    ks_pack(m.suf, &m.suf_len, 0x80);
    ks_pack(m.suf, &m.suf_len, 0x80);
  }
  if (ty) ks_pack(m.pre, &m.pre_len, ty);
  rlp_pack_list_header(m.pre, &m.pre_len, m.body_len + m.suf_len);
  u8 hash[32];
  ks_keccak256(m, hash);
  eth_hash_words(hash, out.digest);
  return ETH_OK;
}

#if defined(CS_ETHTX_RECOVERY)
// One record through to its sender, as the GPU's three kernels take it: the fault, and for
// ETH_OK the key Q and the address (20 bytes). Every lane of a warp calls it together (the
// recovery's inversions are shared); `in_batch` is false for a lane past the batch's end.
CS_FN u32 eth_recover(const u8* b, u64 len, bool in_batch, const u32* gtab, apt& Q,
                      u8 address[20]) {
  eth_sig sig;
  u32 fault = in_batch ? eth_parse(b, len, sig) : ETH_EMPTY;
  const bool active = fault == ETH_OK;
  fe e, r, s;
#pragma unroll
  for (int k = 0; k < 8; k++) {
    e.v[k] = active ? sig.digest[k] : 0;
    r.v[k] = active ? sig.r[k] : 0;
    s.v[k] = active ? sig.s[k] : 0;
  }
  const bool found = cs_recover_ecdsa(Q, e, r, s, active ? sig.recid : 0, gtab, active);
  if (active && !found) fault = ETH_NO_KEY;
  if (fault == ETH_OK) ks_eth_address(Q.x.v, Q.y.v, address);
  return fault;
}
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// The GPU runs a batch in three kernels, so that the recovery is the secp256k1 module's own
// recovery kernel, unchanged (its registers and spills as tuned), between two of this module's:
// 1. cs_ethtx_parse: each record's fault into row 0 of `out`, and the recovery kernel's input
//    rows (kernels.cuh, CS_RECOVER_ROWS: e, r, s, then the parity) into `rec`; a faulty record
//    gets r = 0, which the recovery refuses.
// 2. cs_recover_ecdsa_keys (the secp256k1 module) over `rec`, its keys into rows 6-21 of `out`.
// 3. cs_ethtx_address: for each record read without fault, ETH_NO_KEY when the recovery found no
//    key, else the address into rows 1-5.
// `out` is column-major with `stride` words per row: row 0 the fault, rows 1-5 the address (its
// 20 bytes in order, 4 to a word, little-endian), rows 6-21 the key's x then y (8 little-endian
// words each).
#define ETH_OUT_ROWS 22

// Records are bytes[offsets[i], offsets[i + 1]) for i < count (count + 1 offsets).
extern "C" __global__ void cs_ethtx_parse(const u8* __restrict__ bytes,
                                          const u64* __restrict__ offsets, u32 count,
                                          u32* __restrict__ rec, u32* __restrict__ out,
                                          u32 stride) {
  const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const u64 start = offsets[i], end = offsets[i + 1];
  const u64 len = end >= start ? end - start : ~0ull;  // reversed offsets: refused as too long
  eth_sig sig;
  const u32 fault = eth_parse(bytes + start, len, sig);
  const bool ok = fault == ETH_OK;
#pragma unroll
  for (int k = 0; k < 8; k++) {
    rec[(size_t)k * stride + i] = ok ? sig.digest[k] : 0;
    rec[(size_t)(8 + k) * stride + i] = ok ? sig.r[k] : 0;
    rec[(size_t)(16 + k) * stride + i] = ok ? sig.s[k] : 0;
  }
  rec[(size_t)24 * stride + i] = ok ? sig.recid : 0;
  out[i] = fault;
}

// `found`: the recovery kernel's bitmap, bit i (of 32-bit word i / 32) set when record i has a key.
extern "C" __global__ void cs_ethtx_address(const u32* __restrict__ found, u32 count,
                                            u32* __restrict__ out, u32 stride) {
  const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count || out[i] != ETH_OK) return;
  if (((found[i >> 5] >> (i & 31)) & 1u) == 0) {
    out[i] = ETH_NO_KEY;
    return;
  }
  u32 x[8], y[8];
#pragma unroll
  for (int k = 0; k < 8; k++) {
    x[k] = out[(size_t)(6 + k) * stride + i];
    y[k] = out[(size_t)(14 + k) * stride + i];
  }
  u8 address[20];
  ks_eth_address(x, y, address);
#pragma unroll
  for (int k = 0; k < 5; k++)
    out[(size_t)(1 + k) * stride + i] = (u32)address[4 * k] | ((u32)address[4 * k + 1] << 8) |
                                        ((u32)address[4 * k + 2] << 16) |
                                        ((u32)address[4 * k + 3] << 24);
}
#endif
