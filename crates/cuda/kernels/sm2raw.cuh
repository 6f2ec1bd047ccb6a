// SM2 records from the node's own bytes to the verification kernels' input, one thread per
// record: the SEC1 key decoded and checked (sec1.cuh), Z_A computed (za.cuh), e = SM3(Z_A ‖ M)
// (sm3.cuh), and e, r, s and the affine key written as column-major rows. The host only copies
// each record's bytes and cuts them by offsets (crate::raw); every per-record error is a code the
// host maps to the CPU path's text.
//
// Chunk layout (crate::raw::stage): record i is three spans of `bytes`, cut by offsets[3i ..
// 3i + 3] (32-bit, relative to the chunk, non-decreasing, the host's own):
//   [offsets[3i], offsets[3i + 1])      r (32 bytes, big-endian) ‖ s (32) ‖ the SEC1 key
//   [offsets[3i + 1], offsets[3i + 2])  the signer's identifier (at most CS_ID_MAX bytes)
//   [offsets[3i + 2], offsets[3i + 3])  the message
// Output: the rows of chainsig_core::Batch with full keys (e 0-7, r 8-15, s 16-23, x 24-31,
// y 32-39, little-endian words, column-major with `stride`), the layout the default kernel reads,
// and faults[i]: CS_KEY_OK, a sec1.cuh code, or CS_RAW_ID_LONG. A record with a fault gets r = 0,
// which the verification rejects before any point arithmetic; the host reports its fault instead.
// The known signers' entry writes the signed layout instead (e, r, s, then the signer's number in
// row 24) with the key taken from the signer's table (entry 0 of a key table is the key itself,
// host_tables.h), whose encodings the host matched byte for byte.
// Assumes: sec1.cuh, za.cuh, sm3.cuh and the layers below them. Timing: variable; all public.
#pragma once

#define CS_RAW_ID_LONG 7  // an identifier longer than ENTL's 16 bits of bit length hold

// The digest e and r, s of one record whose key P is known to be on the curve; false (and all
// three zero) when the identifier is too long for ENTL.
CS_FN bool sm2_raw_digest(fe& e, fe& r, fe& s, const unsigned char* rs, const apt& P,
                          const unsigned char* id, u32 idlen, const unsigned char* msg,
                          u32 msglen) {
  if (idlen > CS_ID_MAX) {
    fe_set_word(e, 0);
    fe_set_word(r, 0);
    fe_set_word(s, 0);
    return false;
  }
  u32 za[8];
  sm2_z_a(za, id, idlen, P);
  sm3_za_message(e.v, za, msg, msglen);
  fe_from_be32(r, rs);
  fe_from_be32(s, rs + 32);
  return true;
}

// One record of a fresh signer: its fault code, and e, r, s, P for the verification (all zero
// under a fault, so that r = 0 fails it at once).
CS_FN u32 sm2_raw_record(fe& e, fe& r, fe& s, apt& P, const unsigned char* rec, u32 key_len,
                         const unsigned char* id, u32 idlen, const unsigned char* msg,
                         u32 msglen) {
  u32 fault = sec1_decode(P, rec + 64, key_len);
  if (fault == CS_KEY_OK && !sm2_raw_digest(e, r, s, rec, P, id, idlen, msg, msglen))
    fault = CS_RAW_ID_LONG;
  if (fault != CS_KEY_OK) {
    fe_set_word(e, 0);
    fe_set_word(r, 0);
    fe_set_word(s, 0);
    fe_set_word(P.x, 0);
    fe_set_word(P.y, 0);
  }
  return fault;
}

CS_FN void cs_raw_store(u32* rows, u32 stride, u32 row, u32 i, const fe& a) {
#pragma unroll
  for (int j = 0; j < 8; j++) rows[(size_t)(row + j) * stride + i] = a.v[j];
}

// Record i of a chunk of fresh signers, as the kernel's thread i runs it (the host build runs it
// in a loop over the chunk).
CS_FN void cs_sm2_raw_item(const u32* offsets, const unsigned char* bytes, u32 stride, u32 i,
                           u32* rows, unsigned char* faults) {
  const u32 o0 = offsets[3 * i], o1 = offsets[3 * i + 1];
  const u32 o2 = offsets[3 * i + 2], o3 = offsets[3 * i + 3];
  fe e, r, s;
  apt P;
  faults[i] = (unsigned char)sm2_raw_record(e, r, s, P, bytes + o0, o1 - o0 - 64, bytes + o1,
                                            o2 - o1, bytes + o2, o3 - o2);
  cs_raw_store(rows, stride, 0, i, e);
  cs_raw_store(rows, stride, 8, i, r);
  cs_raw_store(rows, stride, 16, i, s);
  cs_raw_store(rows, stride, 24, i, P.x);
  cs_raw_store(rows, stride, 32, i, P.y);
}

// Record i of a chunk of known signers: signers[i] is its number among the tables in ktabs.
CS_FN void cs_sm2_raw_signed_item(const u32* offsets, const unsigned char* bytes,
                                  const u32* signers, u32 stride, u32 i, const u32* ktabs,
                                  u32* rows, unsigned char* faults) {
  const u32 o0 = offsets[3 * i], o1 = offsets[3 * i + 1];
  const u32 o2 = offsets[3 * i + 2], o3 = offsets[3 * i + 3];
  const u32 signer = signers[i];
  const u32* key = ktabs + (size_t)signer * CS_KTABLE_WORDS;
  apt P;
#pragma unroll
  for (int j = 0; j < 8; j++) {
    P.x.v[j] = key[j];
    P.y.v[j] = key[8 + j];
  }
  fe e, r, s;
  const bool ok = sm2_raw_digest(e, r, s, bytes + o0, P, bytes + o1, o2 - o1, bytes + o2, o3 - o2);
  faults[i] = ok ? CS_KEY_OK : CS_RAW_ID_LONG;
  cs_raw_store(rows, stride, 0, i, e);
  cs_raw_store(rows, stride, 8, i, r);
  cs_raw_store(rows, stride, 16, i, s);
  rows[(size_t)24 * stride + i] = signer;
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
extern "C" __global__ void cs_sm2_raw(const u32* __restrict__ offsets,
                                      const unsigned char* __restrict__ bytes, u32 stride,
                                      u32 count, u32* __restrict__ rows,
                                      unsigned char* __restrict__ faults) {
  const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) cs_sm2_raw_item(offsets, bytes, stride, i, rows, faults);
}

extern "C" __global__ void cs_sm2_raw_signed(const u32* __restrict__ offsets,
                                             const unsigned char* __restrict__ bytes,
                                             const u32* __restrict__ signers, u32 stride,
                                             u32 count, const u32* __restrict__ ktabs,
                                             u32* __restrict__ rows,
                                             unsigned char* __restrict__ faults) {
  const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) cs_sm2_raw_signed_item(offsets, bytes, signers, stride, i, ktabs, rows, faults);
}
#endif
