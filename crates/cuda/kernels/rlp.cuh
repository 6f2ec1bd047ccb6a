// Bounds-checked RLP reading (Ethereum Yellow Paper, appendix B) with the canonical-form rules
// of alloy-rlp, the decoder of the CPU path (chainsig-eth's rawtx::recover_raw): one thread reads
// one record of `end` bytes and every read is checked against `end`, so no input reads outside
// its record. A header is refused when it is cut short, when a one-byte string encodes a byte
// below 0x80 (that byte is its own encoding), when a long-form length has a leading zero or
// encodes fewer than 56 bytes, and when its payload runs past `end`. Integers are refused with a
// leading zero or more bytes than their type holds; addresses and hashes need exactly 20 and 32
// bytes. Which of these reasons it was is not kept: the CPU path reports them all as malformed
// RLP, and only the category crosses to the host.
//
// Bounds: records below 2^31 bytes (ethtx.cuh's limit is far lower).
// Assumes: types.h and keccak.cuh (for u8). Shared by the GPU module and the host build.
// Timing: variable; all inputs are public.
#pragma once

// One item: its payload [start, start + len) and whether it is a list.
struct rlp_item {
  u32 start;
  u32 len;
  bool list;
};

// Where the item after `it` starts.
CS_FN u32 rlp_end(const rlp_item& it) { return it.start + it.len; }

// Decodes the header at pos (alloy_rlp::Header::decode): false when it is not canonical or the
// payload would pass end.
CS_FN bool rlp_header(const u8* b, u32 pos, u32 end, rlp_item& it) {
  if (pos >= end) return false;
  const u32 lead = b[pos];
  if (lead < 0x80) {  // a single byte, its own payload
    it.start = pos;
    it.len = 1;
    it.list = false;
    return true;
  }
  if (lead <= 0xb7 || (lead >= 0xc0 && lead <= 0xf7)) {  // short string or list
    it.list = lead >= 0xc0;
    it.start = pos + 1;
    it.len = lead - (it.list ? 0xc0 : 0x80);
    if (!it.list && it.len == 1 && (it.start >= end || b[it.start] < 0x80)) return false;
  } else {  // long form: 1 to 8 bytes of big-endian length follow
    it.list = lead >= 0xf8;
    const u32 len_of_len = lead - (it.list ? 0xf7 : 0xb7);
    if (end - pos - 1 < len_of_len) return false;
    if (b[pos + 1] == 0) return false;  // a leading zero in the length
    u64 len = 0;
    for (u32 k = 0; k < len_of_len; k++) len = (len << 8) | b[pos + 1 + k];
    if (len < 56) return false;  // fits the short form
    it.start = pos + 1 + len_of_len;
    if (len > (u64)(end - it.start)) return false;
    it.len = (u32)len;
  }
  return it.len <= end - it.start;
}

// A string item at pos; pos moves past it.
CS_FN bool rlp_string(const u8* b, u32& pos, u32 end, rlp_item& it) {
  if (!rlp_header(b, pos, end, it) || it.list) return false;
  pos = rlp_end(it);
  return true;
}

// A list item at pos; pos moves past it.
CS_FN bool rlp_list(const u8* b, u32& pos, u32 end, rlp_item& it) {
  if (!rlp_header(b, pos, end, it) || !it.list) return false;
  pos = rlp_end(it);
  return true;
}

// An unsigned integer of at most `bytes` bytes (u8 1, u64 8, u128 16, U256 32): a string without
// a leading zero (0 is the empty string).
CS_FN bool rlp_uint(const u8* b, u32& pos, u32 end, u32 bytes, rlp_item& it) {
  return rlp_string(b, pos, end, it) && it.len <= bytes && (it.len == 0 || b[it.start] != 0);
}

CS_FN bool rlp_uint_at(const u8* b, u32& pos, u32 end, u32 bytes) {
  rlp_item it;
  return rlp_uint(b, pos, end, bytes, it);
}

// A string of exactly `bytes` bytes (an address: 20; a hash: 32).
CS_FN bool rlp_fixed(const u8* b, u32& pos, u32 end, u32 bytes) {
  rlp_item it;
  return rlp_string(b, pos, end, it) && it.len == bytes;
}

// Any string (a transaction's input).
CS_FN bool rlp_bytes(const u8* b, u32& pos, u32 end) {
  rlp_item it;
  return rlp_string(b, pos, end, it);
}

// A call's recipient or, as the empty string, contract creation.
CS_FN bool rlp_to(const u8* b, u32& pos, u32 end) {
  rlp_item it;
  return rlp_string(b, pos, end, it) && (it.len == 0 || it.len == 20);
}

// A list of strings of exactly `bytes` bytes each (storage keys, blob versioned hashes).
CS_FN bool rlp_fixed_list(const u8* b, u32& pos, u32 end, u32 bytes) {
  rlp_item list;
  if (!rlp_list(b, pos, end, list)) return false;
  u32 at = list.start;
  while (at < rlp_end(list))
    if (!rlp_fixed(b, at, rlp_end(list), bytes)) return false;
  return true;
}

// An EIP-2930 access list: a list of [address, [storage key, ...]], each entry filling its list
// exactly.
CS_FN bool rlp_access_list(const u8* b, u32& pos, u32 end) {
  rlp_item list;
  if (!rlp_list(b, pos, end, list)) return false;
  u32 at = list.start;
  while (at < rlp_end(list)) {
    rlp_item entry;
    if (!rlp_list(b, at, rlp_end(list), entry)) return false;
    u32 in = entry.start;
    if (!rlp_fixed(b, in, rlp_end(entry), 20) || !rlp_fixed_list(b, in, rlp_end(entry), 32) ||
        in != rlp_end(entry))
      return false;
  }
  return true;
}

// An EIP-7702 authorization list: a list of [chain id, address, nonce, y_parity, r, s] (U256,
// 20 bytes, u64, u8, U256, U256), each filling its list exactly. Their signatures are not
// checked here: an invalid authorization is skipped by the chain, it does not void the
// transaction.
CS_FN bool rlp_authorization_list(const u8* b, u32& pos, u32 end) {
  rlp_item list;
  if (!rlp_list(b, pos, end, list)) return false;
  u32 at = list.start;
  while (at < rlp_end(list)) {
    rlp_item entry;
    if (!rlp_list(b, at, rlp_end(list), entry)) return false;
    const u32 stop = rlp_end(entry);
    u32 in = entry.start;
    if (!rlp_uint_at(b, in, stop, 32) || !rlp_fixed(b, in, stop, 20) ||
        !rlp_uint_at(b, in, stop, 8) || !rlp_uint_at(b, in, stop, 1) ||
        !rlp_uint_at(b, in, stop, 32) || !rlp_uint_at(b, in, stop, 32) || in != stop)
      return false;
  }
  return true;
}

// Bytes of the RLP header of a list (or string) with a payload of len bytes.
CS_FN u32 rlp_header_len(u32 len) {
  if (len < 56) return 1;
  u32 n = 0;
  for (u32 v = len; v != 0; v >>= 8) n++;
  return 1 + n;
}

// Appends the header of a list with a payload of len bytes to a packed register string
// (keccak.cuh's ks_pack).
CS_FN void rlp_pack_list_header(u64 w[2], u32* at, u32 len) {
  if (len < 56) {
    ks_pack(w, at, 0xc0 + len);
    return;
  }
  const u32 n = rlp_header_len(len) - 1;
  ks_pack(w, at, 0xf7 + n);
  for (u32 k = n; k-- > 0;) ks_pack(w, at, len >> (8 * k));
}

// Appends the RLP encoding of the integer v to a packed register string.
CS_FN void rlp_pack_uint(u64 w[2], u32* at, u64 v) {
  if (v != 0 && v < 0x80) {
    ks_pack(w, at, (u32)v);
    return;
  }
  u32 n = 0;
  for (u64 t = v; t != 0; t >>= 8) n++;
  ks_pack(w, at, 0x80 + n);
  for (u32 k = n; k-- > 0;) ks_pack(w, at, (u32)(v >> (8 * k)));
}
