//! Byte formats and the message code: centered binomial sampling (§4), E8 encoding and decoding (§5),
//! the NTRU Prime radix encoding of public keys (§6.1), and secret-key and ciphertext packing (§6.2–3).

use crate::arith::{negative_mask, SmallModulus};
use crate::params::Params;

/// Bit t of a little-endian bit stream.
#[inline(always)]
fn bit(bytes: &[u8], t: usize) -> i32 {
    ((bytes[t >> 3] >> (t & 7)) & 1) as i32
}

/// Sample(B): coefficient k is (sum of η bits) − (sum of the next η bits) at stream position 2ηk.
///
/// `bytes` must hold at least C = ⌈2ηn/8⌉ bytes.
pub fn sample_cbd(p: &Params, bytes: &[u8]) -> Vec<i8> {
    let eta = p.eta as usize;
    assert!(bytes.len() >= p.coin_bytes(), "sampler input too short");
    (0..p.n)
        .map(|k| {
            let start = 2 * eta * k;
            let plus: i32 = (0..eta).map(|j| bit(bytes, start + j)).sum();
            let minus: i32 = (0..eta).map(|j| bit(bytes, start + eta + j)).sum();
            (plus - minus) as i8
        })
        .collect()
}

/// The [8,4,4] extended Hamming codeword of each nibble (spec §5.1).
pub const E8_CODEWORDS: [u8; 16] = [
    0x00, 0x55, 0x0f, 0x5a, 0x3c, 0x69, 0x33, 0x66, 0xf0, 0xa5, 0xff, 0xaa, 0xcc, 0x99, 0xc3, 0x96,
];

/// The codeword of a nibble, computed without a secret-indexed table lookup.
#[inline(always)]
fn codeword(nibble: u8) -> u8 {
    let b = |j: u8| 0u8.wrapping_sub((nibble >> j) & 1);
    (b(0) & 0x55) ^ (b(1) & 0x0f) ^ (b(2) & 0x3c) ^ (b(3) & 0xf0)
}

/// Compress σ ∈ [0, q)^n and add the encoded message (spec §5.2). Result in [0, q2).
pub fn compress_with_message(p: &Params, sigma: &[i32], msg: &[u8]) -> Vec<i32> {
    let m = SmallModulus::new(p.q);
    let half_q2 = p.q2 / 2;
    let mut bits = vec![0i32; p.n];
    for t in 0..2 * p.msg_bytes() {
        let nibble = (msg[t / 2] >> (4 * (t & 1))) & 0x0f;
        let word = codeword(nibble);
        for j in 0..8 {
            bits[8 * t + j] = ((word >> j) & 1) as i32;
        }
    }
    sigma
        .iter()
        .zip(&bits)
        .map(|(&s, &b)| (m.div_floor(p.q2 * s + (p.q - 1) / 2) + half_q2 * b) & (p.q2 - 1))
        .collect()
}

/// All-ones when a < b (|a|, |b| < 2^30).
#[inline(always)]
fn lt_mask(a: i32, b: i32) -> i32 {
    negative_mask(a - b)
}

#[inline(always)]
fn select(mask: i32, yes: i32, no: i32) -> i32 {
    (yes & mask) | (no & !mask)
}

/// Decode one block of 8 values in [0, q2) to a nibble, with the exact tie rules of spec §5.4.
/// No branch depends on the values.
pub fn e8_decode_block(q2: i32, v: &[i32]) -> u8 {
    let half = q2 / 2;
    let mut alpha = [0i32; 8];
    let mut beta = [0i32; 8];
    for j in 0..8 {
        let beyond_half = lt_mask(half, v[j]);
        let d = select(beyond_half, q2 - v[j], v[j]);
        alpha[j] = d * d;
        beta[j] = (v[j] - half) * (v[j] - half);
    }
    let mut total = [0i32; 2];
    let mut flags = [[0i32; 4]; 2];
    for coset in 0..2 {
        let mut gaps = [0i32; 4];
        let mut parity = 0i32;
        for i in 0..4 {
            let (e, o) = (2 * i, 2 * i + 1);
            let (primary, alternative) = if coset == 0 {
                (alpha[e] + alpha[o], beta[e] + beta[o])
            } else {
                (beta[e] + alpha[o], alpha[e] + beta[o])
            };
            let take_alt = lt_mask(alternative, primary);
            flags[coset][i] = take_alt & 1;
            parity ^= take_alt & 1;
            total[coset] += select(take_alt, alternative, primary);
            gaps[i] = (alternative - primary).abs();
        }
        // Odd parity: flip the pair with the smallest gap (the lowest index among equals).
        let mut best = gaps[0];
        let mut best_index = 0i32;
        for (i, &gap) in gaps.iter().enumerate().skip(1) {
            let better = lt_mask(gap, best);
            best = select(better, gap, best);
            best_index = select(better, i as i32, best_index);
        }
        let odd = -parity;
        for (i, flag) in flags[coset].iter_mut().enumerate() {
            let chosen = !negative_mask((i as i32 - best_index) | (best_index - i as i32));
            *flag ^= chosen & odd & 1;
        }
        total[coset] += best & odd;
    }
    let coset = lt_mask(total[1], total[0]);
    let u: Vec<i32> = (0..4)
        .map(|i| select(coset, flags[1][i], flags[0][i]))
        .collect();
    ((coset & 1) + 2 * u[0] + 4 * (u[0] ^ u[1]) + 8 * u[3]) as u8
}

/// Decode w ∈ [0, q2)^n to the MSG-byte message.
pub fn e8_decode_message(p: &Params, w: &[i32]) -> Vec<u8> {
    let mut msg = vec![0u8; p.msg_bytes()];
    for t in 0..2 * p.msg_bytes() {
        let nibble = e8_decode_block(p.q2, &w[8 * t..8 * t + 8]);
        msg[t / 2] |= nibble << (4 * (t & 1));
    }
    msg
}

/// NTRU Prime radix encoding of values 0 ≤ r_i < m_i ≤ 2^14 (spec §6.1).
pub fn radix_encode(out: &mut Vec<u8>, values: &[u32], moduli: &[u32]) {
    match values.len() {
        0 => {}
        1 => {
            let (mut r, mut m) = (values[0], moduli[0]);
            while m > 1 {
                out.push(r as u8);
                r >>= 8;
                m = m.div_ceil(256);
            }
        }
        len => {
            let mut next_values = Vec::with_capacity(len.div_ceil(2));
            let mut next_moduli = Vec::with_capacity(len.div_ceil(2));
            for i in 0..len / 2 {
                let mut r = values[2 * i] + moduli[2 * i] * values[2 * i + 1];
                let mut m = moduli[2 * i] * moduli[2 * i + 1];
                while m >= 16384 {
                    out.push(r as u8);
                    r >>= 8;
                    m = m.div_ceil(256);
                }
                next_values.push(r);
                next_moduli.push(m);
            }
            if len % 2 == 1 {
                next_values.push(values[len - 1]);
                next_moduli.push(moduli[len - 1]);
            }
            radix_encode(out, &next_values, &next_moduli);
        }
    }
}

/// Inverse of [`radix_encode`], without validity checks (every output is below its modulus).
/// Returns how many bytes were read; `bytes` must be long enough (the caller checks the pk length).
pub fn radix_decode(out: &mut [u32], bytes: &[u8], moduli: &[u32]) -> usize {
    let len = moduli.len();
    match len {
        0 => 0,
        1 => {
            let m = moduli[0];
            if m == 1 {
                out[0] = 0;
                0
            } else if m <= 256 {
                out[0] = bytes[0] as u32 % m;
                1
            } else {
                out[0] = (bytes[0] as u32 + 256 * bytes[1] as u32) % m;
                2
            }
        }
        _ => {
            let pairs = len / 2;
            let mut low = Vec::with_capacity(pairs);
            let mut scale = Vec::with_capacity(pairs);
            let mut next_moduli = Vec::with_capacity(len.div_ceil(2));
            let mut pos = 0;
            for i in 0..pairs {
                let m = moduli[2 * i] * moduli[2 * i + 1];
                if m > 256 * 16383 {
                    low.push(bytes[pos] as u32 + 256 * bytes[pos + 1] as u32);
                    scale.push(65536);
                    next_moduli.push(m.div_ceil(256).div_ceil(256));
                    pos += 2;
                } else if m >= 16384 {
                    low.push(bytes[pos] as u32);
                    scale.push(256);
                    next_moduli.push(m.div_ceil(256));
                    pos += 1;
                } else {
                    low.push(0);
                    scale.push(1);
                    next_moduli.push(m);
                }
            }
            if len % 2 == 1 {
                next_moduli.push(moduli[len - 1]);
            }
            let mut upper = vec![0u32; next_moduli.len()];
            pos += radix_decode(&mut upper, &bytes[pos..], &next_moduli);
            for i in 0..pairs {
                let r = low[i] + scale[i] * upper[i];
                out[2 * i] = r % moduli[2 * i];
                out[2 * i + 1] = (r / moduli[2 * i]) % moduli[2 * i + 1];
            }
            if len % 2 == 1 {
                out[len - 1] = upper[pairs];
            }
            pos
        }
    }
}

/// Encode(h) for h ∈ [0, q)^n: the public key.
pub fn encode_pk(p: &Params, h: &[i32]) -> Vec<u8> {
    let values: Vec<u32> = h.iter().map(|&v| v as u32).collect();
    let moduli = vec![p.q as u32; p.n];
    let mut out = Vec::with_capacity(p.pk_bytes);
    radix_encode(&mut out, &values, &moduli);
    out
}

/// Decode(pk) to h ∈ [0, q)^n. `pk` must be exactly pk_bytes long.
pub fn decode_pk(p: &Params, pk: &[u8]) -> Vec<i32> {
    let moduli = vec![p.q as u32; p.n];
    let mut h = vec![0u32; p.n];
    let used = radix_decode(&mut h, pk, &moduli);
    debug_assert_eq!(used, p.pk_bytes);
    h.into_iter().map(|v| v as i32).collect()
}

/// PackSK: nibble k is BOUND − f_k, low nibble first.
pub fn pack_sk(p: &Params, f: &[i8]) -> Vec<u8> {
    let mut out = vec![0u8; p.sk_pke_bytes()];
    for (k, &fk) in f.iter().enumerate() {
        out[k / 2] |= (((p.bound() - fk as i32) & 0x0f) as u8) << (4 * (k & 1));
    }
    out
}

/// UnpackSK: f_k = BOUND − nibble k, no validation (range BOUND − 15 … BOUND).
pub fn unpack_sk(p: &Params, bytes: &[u8]) -> Vec<i8> {
    (0..p.n)
        .map(|k| (p.bound() - ((bytes[k / 2] >> (4 * (k & 1))) & 0x0f) as i32) as i8)
        .collect()
}

/// PackCT: log2 q2 bits per coefficient, little-endian bit stream, zero padding.
pub fn pack_ct(p: &Params, c: &[i32]) -> Vec<u8> {
    let width = p.log2_q2 as usize;
    let mut out = vec![0u8; p.ct_bytes()];
    for (i, &ci) in c.iter().enumerate() {
        for b in 0..width {
            let t = i * width + b;
            out[t >> 3] |= (((ci >> b) & 1) as u8) << (t & 7);
        }
    }
    out
}

/// UnpackCT: the inverse of [`pack_ct`], ignoring padding bits.
pub fn unpack_ct(p: &Params, bytes: &[u8]) -> Vec<i32> {
    let width = p.log2_q2 as usize;
    (0..p.n)
        .map(|i| (0..width).map(|b| bit(bytes, i * width + b) << b).sum())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamSet;

    #[test]
    fn codewords_match_the_table() {
        for a in 0..16u8 {
            assert_eq!(codeword(a), E8_CODEWORDS[a as usize]);
        }
    }

    #[test]
    fn sampler_matches_the_spec() {
        let bytes: Vec<u8> = (0..2000).map(|i| i as u8).collect();
        let s653 = sample_cbd(ParamSet::Ctru653.params(), &bytes);
        assert_eq!(
            s653[..16],
            [0, 1, -1, 0, 2, -1, -1, 1, 2, -1, 0, 1, 0, -2, -2, 1]
        );
        assert_eq!(s653[648..], [1, 1, 1, -2, -1]);
        let s761 = sample_cbd(ParamSet::Ctru761.params(), &bytes);
        assert_eq!(
            s761[..16],
            [0, 0, 1, 0, 1, 0, 2, 0, -1, 0, 0, 0, 0, 0, 1, 0]
        );
        assert_eq!(s761[756..], [0, 1, 1, 1, -2]);
        let s1277 = sample_cbd(ParamSet::Ctru1277.params(), &bytes);
        assert_eq!(s1277[..16], s761[..16]);
        assert_eq!(s1277[1272..], [-2, 1, -1, 1, -1]);
    }

    #[test]
    fn compression_matches_the_spec() {
        for set in ParamSet::ALL {
            let p = set.params();
            let mut sigma = vec![0i32; p.n];
            sigma[..4].copy_from_slice(&[1, p.q - 1, (p.q - 1) / 2, (p.q + 1) / 2]);
            let mut msg = vec![0u8; p.msg_bytes()];
            msg[0] = 1;
            let c = compress_with_message(p, &sigma, &msg);
            let h = p.q2 / 2;
            assert_eq!(c[..10], [h, 0, 0, h, h, 0, h, 0, 0, 0], "{set}");
            // The floor term against plain division, for every σ.
            for s in 0..p.q {
                let zero = vec![0u8; p.msg_bytes()];
                let mut one = vec![0; p.n];
                one[p.n - 1] = s;
                let got = compress_with_message(p, &one, &zero)[p.n - 1];
                assert_eq!(got, ((p.q2 * s + (p.q - 1) / 2) / p.q) % p.q2);
            }
        }
    }

    #[test]
    fn e8_decoder_matches_the_spec() {
        for q2 in [1024, 2048] {
            let h = q2 / 2;
            let q4 = q2 / 4;
            assert_eq!(e8_decode_block(q2, &[0; 8]), 0);
            assert_eq!(e8_decode_block(q2, &[q4; 8]), 0);
            assert_eq!(e8_decode_block(q2, &[h; 8]), 10);
            assert_eq!(e8_decode_block(q2, &[h, 0, 0, 0, 0, 0, 0, 0]), 0);
            assert_eq!(e8_decode_block(q2, &[q4, q4, 0, 0, 0, 0, 0, 0]), 0);
            assert_eq!(e8_decode_block(q2, &[h, h, h, h, 0, 0, 0, q2 - 1]), 2);
            for a in 0..16u8 {
                let word = E8_CODEWORDS[a as usize];
                let v: Vec<i32> = (0..8).map(|j| h * ((word >> j) & 1) as i32).collect();
                assert_eq!(e8_decode_block(q2, &v), a);
            }
        }
    }

    #[test]
    fn radix_encoding_matches_the_spec() {
        let expected: [[&str; 5]; 3] = [
            [
                "0000",
                "0d120000",
                "0d128c0200",
                "0d122936000000",
                "0d1229360080531d",
            ],
            [
                "0000",
                "ef110000",
                "ef11840200",
                "ef11cf35000000",
                "ef11cf3500746f1c",
            ],
            [
                "0000",
                "c71e0000",
                "c71e680700",
                "c71e575c000000",
                "c71e575c008a0da601",
            ],
        ];
        for (set, rows) in ParamSet::ALL.into_iter().zip(expected) {
            let q = set.params().q as u32;
            let values = [0, 1, 2, 3, q - 1];
            for (len, row) in (1..=5).zip(rows) {
                let mut out = Vec::new();
                radix_encode(&mut out, &values[..len], &vec![q; len]);
                assert_eq!(hex::encode(&out), row, "{set} L={len}");
                let mut back = vec![0u32; len];
                assert_eq!(radix_decode(&mut back, &out, &vec![q; len]), out.len());
                assert_eq!(back, values[..len]);
            }
        }
    }

    #[test]
    fn pk_decoding_of_all_ff_matches_the_spec() {
        let expected = [
            (ParamSet::Ctru653, [1221, 2978, 4429, 1786], 4593),
            (ParamSet::Ctru761, [1982, 2255, 4351, 256], 3503),
            (ParamSet::Ctru1277, [6429, 2062, 4055, 1688], 5898),
        ];
        for (set, head, last) in expected {
            let p = set.params();
            let h = decode_pk(p, &vec![0xff; p.pk_bytes]);
            assert_eq!(h[..4], head, "{set}");
            assert_eq!(h[p.n - 1], last, "{set}");
            let moduli = vec![p.q as u32; p.n];
            let mut back = vec![0u32; p.n];
            let used = radix_decode(&mut back, &vec![0xff; p.pk_bytes], &moduli);
            assert_eq!(used, p.pk_bytes, "{set}");
        }
    }

    #[test]
    fn pk_encoding_matches_the_spec() {
        use sha3::{Digest, Sha3_256};
        let expected = [
            (
                ParamSet::Ctru653,
                "aed4f5173af7b2b06f775aed354333c8e9c939631dac43e43d8d2cff9794fbbb",
            ),
            (
                ParamSet::Ctru761,
                "2f3d5044ae69df80a7408d0d4b48e796524ed4838c2ff8d7c46f1244356d7f33",
            ),
            (
                ParamSet::Ctru1277,
                "8b846490000e7304715a37f9b97dbd6bed6a4f35106346395c892d6f7b227769",
            ),
        ];
        for (set, digest) in expected {
            let p = set.params();
            let h: Vec<i32> = (0..p.n as i32).map(|i| (12345 * i + 678) % p.q).collect();
            let pk = encode_pk(p, &h);
            assert_eq!(pk.len(), p.pk_bytes, "{set}");
            assert_eq!(hex::encode(Sha3_256::digest(&pk)), digest, "{set}");
            assert_eq!(decode_pk(p, &pk), h, "{set}");
        }
    }

    #[test]
    fn sk_and_ct_packing_match_the_spec() {
        for set in ParamSet::ALL {
            let p = set.params();
            let mut f: Vec<i8> = (0..p.n).map(|i| ((i % 3) as i8) - 1).collect();
            f[0] = p.bound() as i8;
            f[p.n - 1] = (1 - p.bound()) as i8;
            let sk = pack_sk(p, &f);
            let (head, tail) = if set == ParamSet::Ctru653 {
                ("708667788667", "78860d")
            } else {
                ("506445566445", "566409")
            };
            assert_eq!(hex::encode(&sk[..6]), head, "{set}");
            assert_eq!(hex::encode(&sk[sk.len() - 3..]), tail, "{set}");
            assert_eq!(unpack_sk(p, &sk), f);

            let c: Vec<i32> = (0..p.n as i32).map(|i| (37 * i + 5) % p.q2).collect();
            let ct = pack_ct(p, &c);
            let (head, tail) = match set {
                ParamSet::Ctru653 => ("0550c113e890095f8c0321", "7d391c64"),
                ParamSet::Ctru761 => ("05a8f0041d99f8320e422d", "196edd01"),
                ParamSet::Ctru1277 => ("05a8f0041d99f8320e422d", "02137100"),
            };
            assert_eq!(hex::encode(&ct[..11]), head, "{set}");
            assert_eq!(hex::encode(&ct[ct.len() - 4..]), tail, "{set}");
            assert_eq!(unpack_ct(p, &ct), c);
        }
    }
}
