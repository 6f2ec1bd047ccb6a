//! Generates the C++ header that gives the kernels their curve: the constants as word functions and
//! the reduction modulo p as straight-line code. The values come from `chainsig_core::curve`, the
//! only place they are written; this file is also compiled into build.rs so the host (CI) build of
//! the kernels uses the same generator as the NVRTC build.
//!
//! The reduction is generic over primes whose powers 2^(32k) mod p (k = 8..15) have small signed
//! base-2^32 digits, taken as the residue or, where only that fits eight digits, the residue minus
//! p (SM2, P-256 and secp256k1 all qualify; P-256 needs the negative rows and the bias of
//! [`Reduction`]): a 512-bit product's high words are folded in by 64-bit signed column sums in one
//! step and one signed carry pass, which leaves 256 bits and a small top carry c ≥ 0. Where the
//! rows repeat digits (SM2's do), the columns share suffix sums of the high words
//! ([`column_sums`]). c·2^256 ≡ c·K (K = 2^256 − p) is then added as the words of c·K (mostly
//! constants) in one carry chain, whose own carry (0 or 1) adds K once more without overflow;
//! [`top_carry_bound`] proves both steps for the curve at hand. (Folding c back into the 64-bit
//! columns and running the carry pass twice more, the first version, cost about 30 more
//! instructions per reduction; the suffix sums and the one chain save 25 of SM2's 87, by
//! `kernel_census --micro`.)

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

/// Little-endian words to big-endian bytes (the inverse of [`words_from_be`]).
pub fn be_from_words(w: &Words) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (j, word) in w.iter().enumerate() {
        out[28 - 4 * j..32 - 4 * j].copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// a ≥ b.
pub fn ge(a: &Words, b: &Words) -> bool {
    for j in (0..8).rev() {
        if a[j] != b[j] {
            return a[j] > b[j];
        }
    }
    true
}

/// a − b mod 2^256.
pub fn sub(a: &Words, b: &Words) -> Words {
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

/// ⌊a / 2⌋.
fn shr1(a: &Words) -> Words {
    let mut out = [0u32; 8];
    for j in 0..8 {
        let hi = if j < 7 { a[j + 1] } else { 0 };
        out[j] = (a[j] >> 1) | (hi << 31);
    }
    out
}

/// R² mod m for R = 2^256 and an odd m > 2^255: the Montgomery form of x is x·R, reached by one
/// Montgomery product with R².
pub fn montgomery_r2(m: &Words) -> Words {
    let mut v = sub(&[0u32; 8], m); // 2^256 mod m, as m > 2^255
    for _ in 0..256 {
        v = double_mod(&v, m);
    }
    v
}

/// −m⁻¹ mod 2^32 for odd m (Newton's iteration doubles the correct low bits each step).
pub fn neg_inverse_mod_2_32(m: u32) -> u32 {
    let mut inv = 1u32;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(m.wrapping_mul(inv)));
    }
    inv.wrapping_neg()
}

/// Balanced base-2^32 digits (each in [−2^31, 2^31)) of the words v, and the carry out of the top:
/// the digits hold v − carry·2^256.
fn balanced_digits_and_carry(v: &Words) -> ([i64; 8], i64) {
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
    (d, carry)
}

/// Balanced digits of a value below 2^256, or None if a ninth digit would be needed.
fn balanced_digits(v: &Words) -> Option<[i64; 8]> {
    let (d, carry) = balanced_digits_and_carry(v);
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

/// How `fe_reduce_wide` folds a 512-bit product for one prime: row k holds the signed base-2^32
/// digits of a representative of 2^(32(8+k)) mod p, the residue itself or, where only that fits
/// eight digits (P-256's top word is 2^32 − 1), the residue minus p. A negative row could make the
/// column total negative; then `bias` times p is added: the columns carry the digits of
/// −bias·(2^256 − p) (`bias_digits`) and the top carry starts at `bias`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reduction {
    pub rows: [[i64; 8]; 8],
    pub bias: u32,
    pub bias_digits: [i64; 8],
    /// The largest top carry the column sums and the carry pass leave ([`top_carry_bound`]).
    pub top_carry_max: u32,
}

/// Balanced digits of the negative value v − 2^256 (v < 2^256 read as its two's complement), or
/// None if they need a ninth digit: they hold it exactly when the top carried out.
fn balanced_digits_negative(v: &Words) -> Option<[i64; 8]> {
    let (d, carry) = balanced_digits_and_carry(v);
    (carry == 1).then_some(d)
}

/// An upper bound on ⌈(2^32 − 1)·d / p⌉ for d < p: how many times p covers one negative row's
/// largest contribution, from the top 64 bits of both (p ≥ 2^255).
fn bias_for(d: &Words, p: &Words) -> u32 {
    let top = |w: &Words| (u64::from(w[7]) << 32) | u64::from(w[6]);
    let num = (1u128 << 32) * (u128::from(top(d)) + 1);
    num.div_ceil(u128::from(top(p))) as u32
}

/// The reduction for prime p, checked: digits small enough for 64-bit column sums, and top carries
/// that fold in without overflow.
pub fn reduction(p: &Words) -> Result<Reduction, CodegenError> {
    // 2^256 mod p = 2^256 − p, valid because p > 2^255.
    let k = sub(&[0u32; 8], p);
    let mut v = k;
    let mut rows = [[0i64; 8]; 8];
    let mut bias = 0u32;
    for (i, row) in rows.iter_mut().enumerate() {
        *row = match balanced_digits(&v) {
            Some(d) => d,
            None => {
                let d = balanced_digits_negative(&sub(&v, p)).ok_or_else(|| {
                    CodegenError(format!("2^(32*{}) mod p needs a ninth digit", 8 + i))
                })?;
                bias += bias_for(&sub(p, &v), p);
                d
            }
        };
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
    // −bias·K in digits: bias·K must stay below 2^255 to have eight of them.
    let mut bk = [0u32; 8];
    let mut carry = 0u64;
    for j in 0..8 {
        let x = u64::from(k[j]) * u64::from(bias) + carry;
        bk[j] = x as u32;
        carry = x >> 32;
    }
    let bias_digits = balanced_digits(&bk)
        .filter(|_| carry == 0)
        .ok_or_else(|| {
            CodegenError(format!(
                "the reduction's bias {bias}·(2^256 − p) is too large"
            ))
        })?
        .map(|d| -d);
    let top_carry_max = top_carry_bound(&rows, bias, p)?;
    Ok(Reduction {
        rows,
        bias,
        bias_digits,
        top_carry_max,
    })
}

/// The largest top carry c the column sums and one carry pass can leave, checked against what the
/// two folds of `fe_reduce_wide` need.
///
/// With the bias, the value the columns hold plus bias·p is non-negative (`bias_for` covers every
/// negative row at its largest), so c = bias + ⌊columns / 2^256⌋ ≥ 0. Column j is at most
/// (1 + P_j)(2^32 − 1), P_j the sum of its positive digits, plus a bias digit below 2^31, so the
/// columns below 7 add less than 2^256 (each P_j < 2^28): c ≤ 1 + P_7 without a bias, one more and
/// the bias with one. With K = 2^256 − p: r + c·K < 2^256 + c·K carries out at most 1 when
/// c·K < 2^256, and after such a carry the remainder is below c·K, so adding K once more stays
/// below 2^256 when (c + 1)·K ≤ 2^256.
pub fn top_carry_bound(rows: &[[i64; 8]; 8], bias: u32, p: &Words) -> Result<u32, CodegenError> {
    let positive_top: i64 = rows.iter().map(|r| r[7].max(0)).sum();
    let mut bound = 1 + positive_top as u64;
    if bias > 0 {
        bound += 1 + u64::from(bias);
    }
    let k = sub(&[0u32; 8], p);
    let k_bits = (0..8)
        .rev()
        .find(|&j| k[j] != 0)
        .map_or(0, |j| 32 * j as u32 + (32 - k[j].leading_zeros()));
    let bound_bits = 64 - (bound + 1).leading_zeros();
    if k_bits + bound_bits > 256 {
        return Err(CodegenError(format!(
            "top carry up to {bound} times 2^256 − p ({k_bits} bits) does not fold in twice"
        )));
    }
    Ok(bound as u32)
}

fn emit_word_fn(out: &mut String, name: &str, w: &Words) {
    let _ = write!(out, "CS_FN u32 {name}(int i) {{ return ");
    for (j, word) in w.iter().enumerate().take(7) {
        let _ = write!(out, "i == {j} ? 0x{word:08x}u : ");
    }
    let _ = writeln!(out, "0x{:08x}u; }}", w[7]);
}

/// One column of the reduction's sums as emitted: `suffix[k]` times u_k = t_{8+k} + … + t_15
/// plus `direct[k]` times t_{8+k}, equal to the column's row digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSum {
    pub suffix: [i64; 8],
    pub direct: [i64; 8],
}

/// Instructions a term of a word t costs, roughly: one add of 32 bits into the 64-bit sum (IADD3
/// takes two such terms with the carries), or two with a shift or multiply.
fn term_cost(coef: i64) -> usize {
    match coef.unsigned_abs() {
        0 => 0,
        1 => 1,
        _ => 2,
    }
}

/// A suffix sum is 64 bits wide: its terms take an add for each half.
fn suffix_cost(coef: i64) -> usize {
    2 * term_cost(coef)
}

/// Each suffix sum below u7 is one 64-bit add.
const SUFFIX_LINK_COST: usize = 2;

/// The cheapest spelling of every column, allowing each suffix sum with coefficient −1, 0 or 1
/// (3^8 choices a column, searched exhaustively), or the rows' digits alone where the suffix sums'
/// own chain of adds would cost more than they save. SM2's rows are runs of equal digits, so
/// suffix sums fit them: 29 terms with the chain instead of 57.
pub fn column_sums(rows: &[[i64; 8]; 8]) -> [ColumnSum; 8] {
    let digits = |j: usize| -> [i64; 8] { std::array::from_fn(|k| rows[k][j]) };
    let direct: [ColumnSum; 8] = std::array::from_fn(|j| ColumnSum {
        suffix: [0; 8],
        direct: digits(j),
    });
    let mixed: [ColumnSum; 8] = std::array::from_fn(|j| {
        let c = digits(j);
        let mut best = direct[j];
        let mut best_cost = cost_of(&best);
        for choice in 0..3usize.pow(8) {
            let mut suffix = [0i64; 8];
            let mut rest = choice;
            for s in suffix.iter_mut() {
                *s = (rest % 3) as i64 - 1;
                rest /= 3;
            }
            // u_m covers t_{8+k} for every m ≤ k.
            let mut covered = 0;
            let direct: [i64; 8] = std::array::from_fn(|k| {
                covered += suffix[k];
                c[k] - covered
            });
            let candidate = ColumnSum { suffix, direct };
            let cost = cost_of(&candidate);
            if cost < best_cost {
                best = candidate;
                best_cost = cost;
            }
        }
        best
    });
    if total_cost(&mixed) < total_cost(&direct) {
        mixed
    } else {
        direct
    }
}

/// The lowest suffix sum any column uses: the chain u7, u6, … must reach it.
fn lowest_suffix(columns: &[ColumnSum; 8]) -> Option<usize> {
    (0..8).find(|&k| columns.iter().any(|c| c.suffix[k] != 0))
}

fn cost_of(c: &ColumnSum) -> usize {
    let suffix: usize = c.suffix.iter().map(|&d| suffix_cost(d)).sum();
    suffix + c.direct.iter().map(|&d| term_cost(d)).sum::<usize>()
}

/// Every column's terms and the chain of suffix sums they use.
fn total_cost(columns: &[ColumnSum; 8]) -> usize {
    let chain = lowest_suffix(columns).map_or(0, |lowest| SUFFIX_LINK_COST * (7 - lowest));
    columns.iter().map(cost_of).sum::<usize>() + chain
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
    let a_zero = a == [0u32; 8];
    if a != minus3 && !a_zero {
        return Err(CodegenError(format!(
            "{}: the kernels' doublings take a = -3 or a = 0 only",
            c.name
        )));
    }
    let plan = reduction(&p)?;
    let sqrt_exp = shr2(&add_small(&p, 1));
    let inv_exp = sub(&p, &[2, 0, 0, 0, 0, 0, 0, 0]);

    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated by chainsig-cuda from chainsig_core::curve::{}; do not edit.",
        c.name
    );
    let _ = writeln!(out, "#define CS_CURVE_NAME \"{}\"", c.name);
    let _ = writeln!(out, "#define CS_CURVE_A_ZERO {}", i32::from(a_zero));
    emit_word_fn(&mut out, "curve_p", &p);
    emit_word_fn(&mut out, "curve_n", &n);
    emit_word_fn(&mut out, "curve_b", &b);
    emit_word_fn(&mut out, "curve_gx", &gx);
    emit_word_fn(&mut out, "curve_gy", &gy);
    emit_word_fn(&mut out, "curve_sqrt_exp", &sqrt_exp);
    emit_word_fn(&mut out, "curve_inv_exp", &inv_exp);
    let k = sub(&[0u32; 8], &p);
    emit_word_fn(&mut out, "curve_k", &k);
    // ECDSA's scalars (kernels/scalar.cuh): Montgomery products modulo n with R = 2^256.
    emit_word_fn(&mut out, "curve_n_half", &shr1(&n));
    emit_word_fn(&mut out, "curve_n_r2", &montgomery_r2(&n));
    let _ = writeln!(
        out,
        "#define CS_N0INV 0x{:08x}u",
        neg_inverse_mod_2_32(n[0])
    );

    // Column sums of the wide product t[0..16): acc_j = t_j + sum_k rows[k][j] * t_{8+k}, spelled
    // with the suffix sums u_k = t_{8+k} + … + t_15 where that takes fewer terms.
    let columns = column_sums(&plan.rows);
    let _ = writeln!(
        out,
        "CS_FN void curve_reduce_columns(const u32 t[16], i64 acc[8]) {{"
    );
    if let Some(lowest) = lowest_suffix(&columns) {
        let _ = writeln!(out, "  i64 u7 = (i64)t[15];");
        for k in (lowest..7).rev() {
            let _ = writeln!(out, "  i64 u{k} = u{} + (i64)t[{}];", k + 1, 8 + k);
        }
    }
    for (j, column) in columns.iter().enumerate() {
        let acc = format!("acc[{j}]");
        let _ = write!(out, "  {acc} = (i64)t[{j}];");
        for k in 0..8 {
            emit_term(&mut out, &acc, column.suffix[k], &format!("u{k}"));
            emit_term(&mut out, &acc, column.direct[k], &format!("t[{}]", 8 + k));
        }
        if plan.bias_digits[j] != 0 {
            let _ = write!(out, " acc[{j}] += {}ll;", plan.bias_digits[j]);
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "}}");
    let _ = writeln!(out, "#define CS_REDUCE_BIAS {}", plan.bias);
    // The words of c·K (K = 2^256 − p) for a top carry c ≤ CS_TOP_CARRY_MAX, below 2^256 by
    // top_carry_bound; the kernels add them to r in one carry chain. Zero words of K cost nothing
    // but the carry they pass on, which is zero where the word below had none.
    let _ = writeln!(out, "#define CS_TOP_CARRY_MAX {}u", plan.top_carry_max);
    let _ = writeln!(out, "CS_FN void curve_k_times(u32 c, u32 ck[8]) {{");
    let _ = writeln!(out, "  u64 x = 0;");
    for (j, word) in k.iter().enumerate() {
        let term = match word {
            0 => "0".to_string(),
            1 => "(u64)c".to_string(),
            w => format!("(u64)c * 0x{w:08x}u"),
        };
        let carry_in = if j == 0 { "" } else { " + (x >> 32)" };
        let _ = writeln!(out, "  x = {term}{carry_in}; ck[{j}] = (u32)x;");
    }
    let _ = writeln!(out, "}}");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spelling the generator picks sums to the rows' digits, column by column, and SM2's
    /// takes the suffix sums (the reason they exist).
    #[test]
    fn column_sums_equal_the_rows_they_spell() {
        for curve in [
            &chainsig_core::curve::SM2,
            &chainsig_core::curve::P256,
            &chainsig_core::curve::SECP256K1,
        ] {
            let plan = reduction(&words_from_be(&curve.p)).expect("reduction");
            let columns = column_sums(&plan.rows);
            for (j, column) in columns.iter().enumerate() {
                let mut covered = 0;
                for k in 0..8 {
                    covered += column.suffix[k];
                    assert_eq!(
                        covered + column.direct[k],
                        plan.rows[k][j],
                        "{} column {j}, t[{}]",
                        curve.name,
                        8 + k
                    );
                }
            }
            let direct: usize = (0..8)
                .map(|j| (0..8).map(|k| term_cost(plan.rows[k][j])).sum::<usize>())
                .sum();
            let chosen = total_cost(&columns);
            assert!(chosen <= direct, "{}: {chosen} > {direct}", curve.name);
            if curve.name == "sm2" {
                assert!(lowest_suffix(&columns).is_some(), "sm2 takes no suffix sum");
                assert!(chosen < direct, "sm2: {chosen} ≥ {direct}");
            }
        }
    }
}
