// The verification entry points every host build exports, written once: each build defines
// CS_EXPORT(name) (its prefix: cs_host_, cs_p256_ / cs_k256_, or a tiny curve's) and asks for the
// families it needs before including this file:
//   CS_EXPORT_SM2    verify (every mode × inversion × key form of cs_verify) and verify_signed
//   CS_EXPORT_ECDSA  verify_ecdsa (both s rules) and recover_ecdsa
// Operands cross the C ABI as 8 little-endian words; each returns 1 for valid (or recovered),
// 0 for not, and verify returns -1 for a configuration it does not know.
// Include after host_io.h and host_tables.h, inside extern "C".
#pragma once

#ifdef CS_EXPORT_SM2
int CS_EXPORT(verify)(int mode, int inv, int compress, const u32* e, const u32* r, const u32* s,
                      const u32* px, const u32* py, u32 parity, const u32* gtab) {
  const sig_in in = load_sig(e, r, s, px, py, parity);
#define CS_CASE(M, I, C) \
  if (mode == M && inv == I && compress == C) return cs_verify<M, I, C>(in, gtab) ? 1 : 0;
  CS_CASE(0, 0, 0) CS_CASE(0, 0, 1) CS_CASE(0, 1, 0) CS_CASE(0, 1, 1)
  CS_CASE(1, 0, 0) CS_CASE(1, 0, 1) CS_CASE(1, 1, 0) CS_CASE(1, 1, 1)
  CS_CASE(2, 0, 0) CS_CASE(2, 0, 1) CS_CASE(2, 1, 0) CS_CASE(2, 1, 1)
#undef CS_CASE
  return -1;
}

// The known signer's verification (cs_verify_signed), ktab the signer's key table.
int CS_EXPORT(verify_signed)(const u32* e, const u32* r, const u32* s, const u32* gtab,
                             const u32* ktab) {
  fe a, b, c;
  load8(a, e);
  load8(b, r);
  load8(c, s);
  return cs_verify_signed(a, b, c, gtab, ktab) ? 1 : 0;
}
#endif

#ifdef CS_EXPORT_ECDSA
// One ECDSA signature (cs_verify_ecdsa, one lane); low_s selects the rule that refuses s > n/2.
int CS_EXPORT(verify_ecdsa)(int low_s, const u32* e, const u32* r, const u32* s, const u32* px,
                            const u32* py, const u32* gtab) {
  const sig_in in = load_sig(e, r, s, px, py, 0);
  apt Q;
  fe_copy(Q.x, in.px);
  fe_copy(Q.y, in.py);
  const bool ok = low_s ? cs_verify_ecdsa<1>(in.e, in.r, in.s, Q, gtab)
                        : cs_verify_ecdsa<0>(in.e, in.r, in.s, Q, gtab);
  return ok ? 1 : 0;
}

// ECDSA key recovery (cs_recover_ecdsa, one lane; id is the parity of R's y): 1 and the key's
// affine x, y, or 0.
int CS_EXPORT(recover_ecdsa)(const u32* e, const u32* r, const u32* s, u32 id, const u32* gtab,
                             u32* x, u32* y) {
  fe a, b, c;
  apt Q;
  load8(a, e);
  load8(b, r);
  load8(c, s);
  if (!cs_recover_ecdsa(Q, a, b, c, id, gtab)) return 0;
  store8(x, Q.x);
  store8(y, Q.y);
  return 1;
}
#endif
