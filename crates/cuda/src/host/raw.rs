//! The raw SM2 path's device code (kernels/sec1.cuh, za.cuh, sm2raw.cuh) run on the CPU through
//! the host build, for the tests that hold it against the CPU path without a GPU.

use crate::codegen::Words;

mod ffi {
    extern "C" {
        pub fn cs_host_sec1_decode(key: *const u8, len: u32, x: *mut u32, y: *mut u32) -> u32;
        pub fn cs_host_z_a(id: *const u8, idlen: u32, x: *const u32, y: *const u32, za: *mut u32);
        pub fn cs_host_sm2_raw_chunk(
            offsets: *const u32,
            bytes: *const u8,
            stride: u32,
            count: u32,
            rows: *mut u32,
            faults: *mut u8,
        );
        pub fn cs_host_sm2_raw_signed_chunk(
            offsets: *const u32,
            bytes: *const u8,
            signers: *const u32,
            stride: u32,
            count: u32,
            ktabs: *const u32,
            rows: *mut u32,
            faults: *mut u8,
        );
    }
}

/// A SEC1 key decoded and checked by the device's routine: (x, y) as little-endian words, or
/// the fault code (kernels/sec1.cuh; [`crate::raw::KeyFault::from_code`]).
pub fn sec1_decode(key: &[u8]) -> Result<(Words, Words), u8> {
    let len = u32::try_from(key.len()).expect("a key below 4 GiB");
    let (mut x, mut y) = ([0u32; 8], [0u32; 8]);
    // SAFETY: key holds len readable bytes; x and y have room for 8 words each.
    let code =
        unsafe { ffi::cs_host_sec1_decode(key.as_ptr(), len, x.as_mut_ptr(), y.as_mut_ptr()) };
    if code == 0 {
        Ok((x, y))
    } else {
        Err(code as u8)
    }
}

/// Z_A by the device's routine, as 32 bytes; `id` at most [`crate::raw::ID_MAX`] bytes and the
/// key's coordinates below p, as the kernel assumes.
pub fn z_a(id: &[u8], x: &Words, y: &Words) -> [u8; 32] {
    assert!(
        id.len() <= crate::raw::ID_MAX,
        "the kernel takes ids of at most 8191 bytes"
    );
    let mut za = [0u32; 8];
    // SAFETY: id holds id.len() readable bytes; x, y 8 words; za has room for 8 words.
    unsafe {
        ffi::cs_host_z_a(
            id.as_ptr(),
            id.len() as u32,
            x.as_ptr(),
            y.as_ptr(),
            za.as_mut_ptr(),
        )
    };
    std::array::from_fn(|k| za[k / 4].to_be_bytes()[k % 4])
}

/// A chunk staged by [`crate::raw::RawPart::stage`] (`staged`, `count` records) through the
/// kernel's per-record code: the verification rows (40 of `stride` words, column-major) and the
/// fault codes. With `signers` (a number per record) and the tables `ktabs` it runs the known
/// signers' entry instead, which writes 25 rows.
pub fn raw_chunk(
    staged: &[u32],
    count: usize,
    stride: usize,
    signed: Option<(&[u32], &[u32])>,
) -> (Vec<u32>, Vec<u8>) {
    assert!(count <= stride && staged.len() > 3 * count);
    let rows_n = if signed.is_some() { 25 } else { 40 };
    let mut rows = vec![0u32; rows_n * stride];
    let mut faults = vec![0xeeu8; count];
    let (offsets, bytes) = staged.split_at(3 * count + 1);
    let end = offsets[3 * count] as usize;
    assert!(
        end <= bytes.len() * 4,
        "the offsets end past the staged bytes"
    );
    // SAFETY: the bytes are read as the u32 words' memory; the kernel code reads only within the
    // offsets, which end inside it (checked above) and do not decrease (the staging's).
    let byte_ptr = bytes.as_ptr().cast::<u8>();
    unsafe {
        match signed {
            None => ffi::cs_host_sm2_raw_chunk(
                offsets.as_ptr(),
                byte_ptr,
                stride as u32,
                count as u32,
                rows.as_mut_ptr(),
                faults.as_mut_ptr(),
            ),
            Some((signers, ktabs)) => {
                assert!(signers.len() >= count);
                let tables = ktabs.len() / super::KTABLE_WORDS;
                assert!(signers[..count].iter().all(|&k| (k as usize) < tables));
                ffi::cs_host_sm2_raw_signed_chunk(
                    offsets.as_ptr(),
                    byte_ptr,
                    signers.as_ptr(),
                    stride as u32,
                    count as u32,
                    ktabs.as_ptr(),
                    rows.as_mut_ptr(),
                    faults.as_mut_ptr(),
                )
            }
        }
    }
    (rows, faults)
}
