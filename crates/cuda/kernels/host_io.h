// Operands from the host's C ABI (8 little-endian words each) into the kernels' types, shared by
// the host builds (host_shim.cpp, host_lanes.cpp, host_ecdsa.cpp, host_exhaustive.cpp). Include after host_layers.h.
#pragma once

static inline void load8(fe& a, const u32* w) {
  for (int i = 0; i < 8; i++) a.v[i] = w[i];
}

static inline void store8(u32* w, const fe& a) {
  for (int i = 0; i < 8; i++) w[i] = a.v[i];
}

// One signature's operands as cs_verify takes them.
static inline sig_in load_sig(const u32* e, const u32* r, const u32* s, const u32* px, const u32* py,
                       u32 parity) {
  sig_in in;
  load8(in.e, e);
  load8(in.r, r);
  load8(in.s, s);
  load8(in.px, px);
  load8(in.py, py);
  in.parity = parity;
  return in;
}
