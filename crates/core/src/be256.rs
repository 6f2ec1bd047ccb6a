//! Big-endian 256-bit arithmetic on byte arrays, for building edge-case scalars such as n + 1 or
//! n − r in generators and tests (not constant time, never used on secrets).

/// a + k mod 2²⁵⁶.
pub fn add_small(a: &[u8; 32], k: u8) -> [u8; 32] {
    let mut out = *a;
    let mut carry = k as u16;
    for byte in out.iter_mut().rev() {
        let v = *byte as u16 + carry;
        *byte = v as u8;
        carry = v >> 8;
    }
    out
}

/// a − b mod 2²⁵⁶.
pub fn sub(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let mut d = a[i] as i16 - b[i] as i16 - borrow;
        borrow = i16::from(d < 0);
        if d < 0 {
            d += 256;
        }
        out[i] = d as u8;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_and_borrows_cross_every_byte() {
        let mut max = [0xffu8; 32];
        assert_eq!(add_small(&max, 1), [0u8; 32]);
        max[31] = 0xfe;
        assert_eq!(add_small(&max, 1), [0xffu8; 32]);
        let mut one = [0u8; 32];
        one[31] = 1;
        assert_eq!(sub(&[0u8; 32], &one), [0xffu8; 32]);
        let n = crate::curve::SM2.n;
        let r = add_small(&[0u8; 32], 5);
        assert_eq!(add_small(&sub(&n, &r), 5), n);
    }
}
