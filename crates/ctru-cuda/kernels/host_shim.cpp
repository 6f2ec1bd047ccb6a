// Host build of the CTRU-Prime kernel arithmetic: the same ctru_mul.cuh routines the GPU kernels run,
// driven by loops in the order a block's threads would cover them. CI checks these against the Rust
// schoolbook reference (tests/ctru_cuda/host_kernel.rs).
#include "ctru_types.h"
#include "ctru_mul.cuh"
#include "keccak.cuh"
#include "kem.cuh"

#include <vector>

extern "C" {

// Method A, schoolbook: out[i·n + k] for every instance i < count.
void ctru_host_school(int prod, int n, int m, const i16* shared_op, const i16* batch, int count,
                      i16* out) {
  std::vector<int> a(n), b(n), d(2 * n - 1);
  for (int k = 0; k < n; k++) a[k] = shared_op[k];
  for (int inst = 0; inst < count; inst++) {
    for (int k = 0; k < n; k++) b[k] = batch[(u64)inst * n + k];
    for (int k = 0; k < 2 * n - 1; k++) d[k] = ctru_school_linear(a.data(), b.data(), n, k);
    for (int k = 0; k < n; k++) out[(u64)inst * n + k] = (i16)ctru_reduce(prod, ctru_fold(d.data(), n, k), m);
  }
}

// Method A, incomplete NTT, phase by phase as the fused kernel runs them. `hat` is the shared operand's
// forward transform (len words). Returns 0, or −1 for a leaf length without a routine.
int ctru_host_ntt(int prod, const ctru_ntt_params* pp, const u32* tw, const u32* hat, const i16* batch,
                  int count, int m, i16* out) {
  const ctru_ntt_params& p = *pp;
  if (p.leaf_len != 3 && p.leaf_len != 5 && p.leaf_len != 7) return -1;
  const int n = p.n, len = p.len;
  std::vector<u32> s(len);
  for (int inst = 0; inst < count; inst++) {
    const i16* src = batch + (u64)inst * n;
    for (int k = 0; k < len; k++) s[k] = k < n ? ctru_lift(src[k], p.prime) : 0u;
    for (int l = 0; l < p.num_layers; l++)
      for (int u = 0; u < len / p.layer[l].radix; u++) ctru_ntt_fwd_unit(s.data(), tw, p, l, u);
    for (int u = 0; u < p.leaves; u++) {
      if (p.leaf_len == 3) ctru_ntt_leaf_unit<3>(s.data(), hat, tw, p, u);
      if (p.leaf_len == 5) ctru_ntt_leaf_unit<5>(s.data(), hat, tw, p, u);
      if (p.leaf_len == 7) ctru_ntt_leaf_unit<7>(s.data(), hat, tw, p, u);
    }
    for (int l = p.num_layers - 1; l >= 0; l--)
      for (int u = 0; u < len / p.layer[l].radix; u++) ctru_ntt_inv_unit(s.data(), tw, p, l, u);
    // The kernel writes the lifted integers over the words in place; so does this.
    int* d = (int*)s.data();
    for (int k = 0; k < 2 * n - 1; k++) d[k] = ctru_ntt_final_unit(s.data(), p, k);
    for (int k = 0; k < n; k++) out[(u64)inst * n + k] = (i16)ctru_reduce(prod, ctru_fold(d, n, k), m);
  }
  return 0;
}

// Method B: builds the digit matrices of the shared operand and of the batch in the tiled layout, then
// runs every 32 × 32 warp tile with the host fragment operations. n_pad and the batch padding are
// multiples of 32, as on the device. `q` is the modulus the matrix entries are reduced by (product 0).
void ctru_host_tc(int prod, int n, int q, int m, const i16* shared_op, const i16* batch, int count,
                  i16* out) {
  const int n_pad = (n + 31) / 32 * 32;
  const int batch_pad = (count + 31) / 32 * 32;
  std::vector<int> a(n);
  for (int k = 0; k < n; k++) a[k] = shared_op[k];
  std::vector<i8> a0((u64)n_pad * n_pad), a1((u64)n_pad * n_pad);
  std::vector<i8> b0((u64)n_pad * batch_pad), b1((u64)n_pad * batch_pad);
  for (int i = 0; i < n_pad; i++)
    for (int j = 0; j < n_pad; j++) ctru_tc_matrix_unit(prod, a.data(), n, n_pad, q, i, j, a0.data(), a1.data());
  for (int col = 0; col < batch_pad; col++)
    for (int k = 0; k < n_pad; k++) ctru_tc_batch_unit(prod, batch, n, count, n_pad, k, col, b0.data(), b1.data());
  std::vector<int> stage(256);
  for (int tc = 0; tc < batch_pad / 32; tc++)
    for (int tr = 0; tr < n_pad / 32; tr++) {
      if (prod == CTRU_MOD_Q)
        ctru_tc_tile<CTRU_MOD_Q>(a0.data(), a1.data(), b0.data(), b1.data(), out, n, n_pad, count, m, tr, tc,
                                 stage.data(), 0, 1);
      else
        ctru_tc_tile<CTRU_MOD_Q2>(a0.data(), a1.data(), b0.data(), b1.data(), out, n, n_pad, count, m, tr, tc,
                                  stage.data(), 0, 1);
    }
}

// ---- The KEM steps (kem.cuh), one loop per GPU kernel of ctru_kem_kernels.cuh, same layouts:
// item i's row starts at i·(row length); rows are ct_bytes, msg_bytes, coin_bytes, n or 32 long.

void ctru_host_sha3_512(const u8* in, int len, u8* out64) { ctru_sha3_512(in, len, out64); }
void ctru_host_shake256(const u8* in, int len, u8* out, int out_len) { ctru_shake256(in, len, out, out_len); }

// c = UnpackCT(ct), centered to [−q2/2, q2/2) as the mod-q2 product expects its batch.
void ctru_host_kem_unpack_ct(const ctru_kem_params* pp, const u8* ct, int count, i16* c) {
  const ctru_kem_params& p = *pp;
  for (int item = 0; item < count; item++)
    for (int i = 0; i < p.n; i++) {
      int v = ctru_ct_coef(p, ct + (u64)item * p.ct_bytes, i);
      c[(u64)item * p.n + i] = (i16)(v - (p.q2 & -(v >= p.q2 / 2)));
    }
}

void ctru_host_kem_decode(const ctru_kem_params* pp, const i16* w, int count, u8* msg) {
  const ctru_kem_params& p = *pp;
  for (int item = 0; item < count; item++)
    for (int j = 0; j < p.msg_bytes; j++)
      msg[(u64)item * p.msg_bytes + j] = ctru_decode_byte(p, w + (u64)item * p.n, j);
}

void ctru_host_kem_message(const ctru_kem_params* pp, const u8* seeds, int count, u8* msg) {
  const ctru_kem_params& p = *pp;
  for (int item = 0; item < count; item++)
    ctru_message_item(p, seeds + (u64)item * CTRU_SEED_BYTES, msg + (u64)item * p.msg_bytes);
}

void ctru_host_kem_derive(const ctru_kem_params* pp, const u8* prefix, const u8* msg, int count, u8* key,
                          u8* rho) {
  const ctru_kem_params& p = *pp;
  for (int item = 0; item < count; item++)
    ctru_derive_item(p, prefix, msg + (u64)item * p.msg_bytes, key + (u64)item * 32,
                     rho + (u64)item * p.coin_bytes);
}

void ctru_host_kem_sample(const ctru_kem_params* pp, const u8* rho, int count, i16* r) {
  const ctru_kem_params& p = *pp;
  for (int item = 0; item < count; item++)
    for (int k = 0; k < p.n; k++)
      r[(u64)item * p.n + k] = (i16)ctru_sample_coef(p, rho + (u64)item * p.coin_bytes, k);
}

void ctru_host_kem_pack(const ctru_kem_params* pp, const i16* sigma, const u8* msg, int count, u8* ct) {
  const ctru_kem_params& p = *pp;
  for (int item = 0; item < count; item++)
    for (int j = 0; j < p.ct_bytes; j++)
      ct[(u64)item * p.ct_bytes + j] =
          ctru_ct_byte(p, sigma + (u64)item * p.n, msg + (u64)item * p.msg_bytes, j);
}

void ctru_host_kem_finish(const ctru_kem_params* pp, const u8* pz, const u8* ct, const u8* ct2,
                          const u8* key, int count, u8* ss) {
  const ctru_kem_params& p = *pp;
  for (int item = 0; item < count; item++)
    ctru_finish_item(p, pz, ct + (u64)item * p.ct_bytes, ct2 + (u64)item * p.ct_bytes,
                     key + (u64)item * 32, ss + (u64)item * 32);
}

}  // extern "C"
