//! Generates the C++ header that gives the kernels their curve: the constants as word functions and
//! the reduction modulo p as straight-line code. The values come from `chainsig_core::curve`, the
//! only place they are written; this file is also compiled into build.rs so the host (CI) build of
//! the kernels uses the same generator as the NVRTC build.
//!
//! The reduction is generic over primes whose powers 2^(32k) mod p (k = 8..15) have small signed
//! base-2^32 digits (SM2, P-256 and secp256k1 all do): a 512-bit product's high words are folded in
//! by 64-bit signed column sums in one step, then the small top carry is folded twice more.

#![allow(clippy::needless_range_loop)] // word-indexed big-integer code reads clearer with indices

use chainsig_core::curve::CurveParams;
use std::fmt::Write as _;

/// 256-bit integer as eight little-endian 32-bit words.
pub type Words = [u32; 8];

/// Big-endian bytes to little-endian words.
pub fn words_from_be(bytes: &[u8; 32]) -> Words {
    let mut w = [0u32; 8];
    for (j, word) in w.iter_mut().enumerate() {
        let o = 32 - 4 * (j + 1);
        *word = u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
    }
    w
}

fn ge(a: &Words, b: &Words) -> bool {
    for j in (0..8).rev() {
        if a[j] != b[j] {
            return a[j] > b[j];
        }
    }
    true
}

/// a − b mod 2^256.
fn sub(a: &Words, b: &Words) -> Words {
    let mut out = [0u32; 8];
    let mut borrow = 0i64;
    for j in 0..8 {
        let d = a[j] as i64 - b[j] as i64 - borrow;
        out[j] = d as u32;
        borrow = i64::from(d < 0);
    }
    out
}

/// 2·a mod m for a < m.
fn double_mod(a: &Words, m: &Words) -> Words {
    let mut out = [0u32; 8];
    let mut carry = 0u32;
    for j in 0..8 {
        out[j] = (a[j] << 1) | carry;
        carry = a[j] >> 31;
    }
    if carry == 1 || ge(&out, m) {
        out = sub(&out, m);
    }
    out
}

fn add_small(a: &Words, k: u32) -> Words {
    let mut out = *a;
    let mut carry = k as u64;
    for w in out.iter_mut() {
        let s = *w as u64 + carry;
        *w = s as u32;
        carry = s >> 32;
    }
    out
}

fn shr2(a: &Words) -> Words {
    let mut out = [0u32; 8];
    for j in 0..8 {
        let hi = if j < 7 { a[j + 1] } else { 0 };
        out[j] = (a[j] >> 2) | (hi << 30);
    }
    out
}

/// Balanced base-2^32 digits of a value below 2^256, or None if a ninth digit would be needed.
fn balanced_digits(v: &Words) -> Option<[i64; 8]> {
    let mut d = [0i64; 8];
    let mut carry = 0i64;
    for j in 0..8 {
        let mut x = v[j] as i64 + carry;
        carry = 0;
        if x >= 1 << 31 {
            x -= 1 << 32;
            carry = 1;
        }
        d[j] = x;
    }
    (carry == 0).then_some(d)
}

/// Why a curve cannot be turned into kernel constants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodegenError(pub String);

impl std::fmt::Display for CodegenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The reduction table: row k holds the signed digits of 2^(32(8+k)) mod p.
pub fn reduction_table(p: &Words) -> Result<[[i64; 8]; 8], CodegenError> {
    // 2^256 mod p = 2^256 − p, valid because p > 2^255.
    let mut v = sub(&[0u32; 8], p);
    let mut rows = [[0i64; 8]; 8];
    for (k, row) in rows.iter_mut().enumerate() {
        *row = balanced_digits(&v)
            .ok_or_else(|| CodegenError(format!("2^(32*{}) mod p needs a ninth digit", 8 + k)))?;
        for _ in 0..32 {
            v = double_mod(&v, p);
        }
    }
    for j in 0..8 {
        let column: i64 = rows.iter().map(|r| r[j].abs()).sum();
        if column >= 1 << 28 {
            return Err(CodegenError(format!(
                "reduction column {j} too large for 64-bit sums"
            )));
        }
    }
    // The top-carry folds assume c·(2^256 mod p) is far below 2^256.
    if sub(&[0u32; 8], p)[7] >= 1 << 16 {
        return Err(CodegenError(
            "2^256 mod p too large for two carry folds".into(),
        ));
    }
    Ok(rows)
}

fn emit_word_fn(out: &mut String, name: &str, w: &Words) {
    let _ = write!(out, "CS_FN u32 {name}(int i) {{ return ");
    for (j, word) in w.iter().enumerate().take(7) {
        let _ = write!(out, "i == {j} ? 0x{word:08x}u : ");
    }
    let _ = writeln!(out, "0x{:08x}u; }}", w[7]);
}

/// Emits `acc += coef * (i64)src` skipping zero coefficients.
fn emit_term(out: &mut String, acc: &str, coef: i64, src: &str) {
    match coef {
        0 => {}
        1 => {
            let _ = write!(out, " {acc} += (i64){src};");
        }
        -1 => {
            let _ = write!(out, " {acc} -= (i64){src};");
        }
        c => {
            let _ = write!(out, " {acc} += (i64){src} * {c}ll;");
        }
    }
}

/// The header the kernels include first (`cs_curve.h`).
pub fn curve_header(c: &CurveParams) -> Result<String, CodegenError> {
    let p = words_from_be(&c.p);
    let n = words_from_be(&c.n);
    let a = words_from_be(&c.a);
    let b = words_from_be(&c.b);
    let gx = words_from_be(&c.gx);
    let gy = words_from_be(&c.gy);
    if p[7] >> 31 == 0 || n[7] >> 31 == 0 {
        return Err(CodegenError(format!(
            "{}: p and n must exceed 2^255",
            c.name
        )));
    }
    if p[0] & 3 != 3 {
        return Err(CodegenError(format!(
            "{}: p must be 3 mod 4 for key decompression",
            c.name
        )));
    }
    let minus3 = sub(&p, &[3, 0, 0, 0, 0, 0, 0, 0]);
    if a != minus3 {
        return Err(CodegenError(format!(
            "{}: only a = -3 curves are implemented so far",
            c.name
        )));
    }
    let rows = reduction_table(&p)?;
    let sqrt_exp = shr2(&add_small(&p, 1));
    let inv_exp = sub(&p, &[2, 0, 0, 0, 0, 0, 0, 0]);

    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated by chainsig-cuda from chainsig_core::curve::{}; do not edit.",
        c.name
    );
    let _ = writeln!(out, "#define CS_CURVE_NAME \"{}\"", c.name);
    let _ = writeln!(out, "#define CS_CURVE_A_MINUS3 1");
    emit_word_fn(&mut out, "curve_p", &p);
    emit_word_fn(&mut out, "curve_n", &n);
    emit_word_fn(&mut out, "curve_b", &b);
    emit_word_fn(&mut out, "curve_gx", &gx);
    emit_word_fn(&mut out, "curve_gy", &gy);
    emit_word_fn(&mut out, "curve_sqrt_exp", &sqrt_exp);
    emit_word_fn(&mut out, "curve_inv_exp", &inv_exp);

    // Column sums of the wide product t[0..16): acc_j = t_j + sum_k rows[k][j] * t_{8+k}.
    let _ = writeln!(
        out,
        "CS_FN void curve_reduce_columns(const u32 t[16], i64 acc[8]) {{"
    );
    for j in 0..8 {
        let _ = write!(out, "  acc[{j}] = (i64)t[{j}];");
        for (k, row) in rows.iter().enumerate() {
            emit_term(
                &mut out,
                &format!("acc[{j}]"),
                row[j],
                &format!("t[{}]", 8 + k),
            );
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "}}");
    // Folding a signed top carry c: acc_j += rows[0][j] * c.
    let _ = writeln!(out, "CS_FN void curve_fold_carry(i64 c, i64 acc[8]) {{");
    for j in 0..8 {
        let coef = rows[0][j];
        if coef != 0 {
            let _ = write!(out, " ");
            emit_term(&mut out, &format!("acc[{j}]"), coef, "c");
            let _ = writeln!(out);
        }
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}
