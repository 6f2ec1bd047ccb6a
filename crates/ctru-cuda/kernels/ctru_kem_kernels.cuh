// The KEM step kernels (GPU only): kem.cuh's units spread over threads. Layouts as in host_shim.cpp:
// item i's row starts at i·(row length). Per-coefficient and per-byte steps take one thread per
// (item, position), flattened; the hashing steps one thread per item.

#define CTRU_KEM_FLAT(total)                                                 \
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;      \
  if (e >= (long long)(total)) return;

extern "C" __global__ void ctru_kem_unpack_ct(const ctru_kem_params p, const u8* ct, int count, i16* c) {
  CTRU_KEM_FLAT((long long)count * p.n)
  const int item = (int)(e / p.n), i = (int)(e % p.n);
  const int v = ctru_ct_coef(p, ct + (u64)item * p.ct_bytes, i);
  c[e] = (i16)(v - (p.q2 & -(v >= p.q2 / 2)));
}

extern "C" __global__ void ctru_kem_decode(const ctru_kem_params p, const i16* w, int count, u8* msg) {
  CTRU_KEM_FLAT((long long)count * p.msg_bytes)
  const int item = (int)(e / p.msg_bytes), j = (int)(e % p.msg_bytes);
  msg[e] = ctru_decode_byte(p, w + (u64)item * p.n, j);
}

extern "C" __global__ void ctru_kem_message(const ctru_kem_params p, const u8* seeds, int count, u8* msg) {
  CTRU_KEM_FLAT(count)
  ctru_message_item(p, seeds + (u64)e * CTRU_SEED_BYTES, msg + (u64)e * p.msg_bytes);
}

extern "C" __global__ void ctru_kem_derive(const ctru_kem_params p, const u8* prefix, const u8* msg,
                                           int count, u8* key, u8* rho) {
  CTRU_KEM_FLAT(count)
  ctru_derive_item(p, prefix, msg + (u64)e * p.msg_bytes, key + (u64)e * 32, rho + (u64)e * p.coin_bytes);
}

extern "C" __global__ void ctru_kem_sample(const ctru_kem_params p, const u8* rho, int count, i16* r) {
  CTRU_KEM_FLAT((long long)count * p.n)
  const int item = (int)(e / p.n), k = (int)(e % p.n);
  r[e] = (i16)ctru_sample_coef(p, rho + (u64)item * p.coin_bytes, k);
}

extern "C" __global__ void ctru_kem_pack(const ctru_kem_params p, const i16* sigma, const u8* msg,
                                         int count, u8* ct) {
  CTRU_KEM_FLAT((long long)count * p.ct_bytes)
  const int item = (int)(e / p.ct_bytes), j = (int)(e % p.ct_bytes);
  ct[e] = ctru_ct_byte(p, sigma + (u64)item * p.n, msg + (u64)item * p.msg_bytes, j);
}

extern "C" __global__ void ctru_kem_finish(const ctru_kem_params p, const u8* pz, const u8* ct,
                                           const u8* ct2, const u8* key, int count, u8* ss) {
  CTRU_KEM_FLAT(count)
  ctru_finish_item(p, pz, ct + (u64)e * p.ct_bytes, ct2 + (u64)e * p.ct_bytes, key + (u64)e * 32,
                   ss + (u64)e * 32);
}
