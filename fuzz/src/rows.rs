//! The C ABI's packed rows (`crates/capi/src/rows.rs`, the layout in `include/chainsig.h`):
//! arbitrary bytes parsed as a batch of rows, then verified through `cs_verify` on a CPU context.
//!
//! What must hold: the parser finds the row boundaries the documented layout gives (computed
//! here a second time, from the header alone); every row is read alone, so a row parses the same
//! inside the batch as by itself; a row the parser refuses gets its own record code, and a valid
//! row placed after any number of refused ones still parses and verifies as valid; `cs_verify`
//! never fails a call whose buffer has the right shape, and its messages stay short; a row read
//! and written again (`chainsig_core::rows::push_row`) reads back as the same record.

use super::short;
use chainsig_capi::{
    cs_context, cs_last_error, cs_open, cs_verify, parse_rows, ParsedRow, CS_ALG_ETH_TX,
    CS_ERR_ARGUMENT, CS_FLAG_MESSAGE, CS_FLAG_TAG, CS_OK, CS_REC_ALGORITHM, CS_REC_FORMAT,
    CS_REC_LENGTH, CS_REC_TRUNCATED, CS_REC_UNREACHED, CS_ROW_ALIGN, CS_ROW_HEADER_LEN,
    CS_ROW_MIN_LEN, CS_SIG_LEN,
};
use std::sync::OnceLock;

/// The fields of one row, as a caller fills them.
pub struct Row<'a> {
    pub alg: u8,
    pub flags: u8,
    pub pubkey: &'a [u8],
    pub sig: &'a [u8; 64],
    pub payload: &'a [u8],
    pub id: &'a [u8],
    pub tag: Option<u64>,
}

impl Row<'_> {
    /// The row's bytes: the 12-byte header (algorithm, flags, two reserved bytes, msg_len as u32
    /// little-endian, id_len as u16, pubkey_len, a reserved byte), then key, r‖s, payload and
    /// identifier, zeros to a multiple of 8, and the tag when the flags announce one.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = vec![self.alg, self.flags, 0, 0];
        out.extend_from_slice(&(self.payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.id.len() as u16).to_le_bytes());
        out.extend_from_slice(&[self.pubkey.len() as u8, 0]);
        for field in [self.pubkey, self.sig, self.payload, self.id] {
            out.extend_from_slice(field);
        }
        out.resize(out.len().next_multiple_of(CS_ROW_ALIGN), 0);
        if let Some(tag) = self.tag {
            out.extend_from_slice(&tag.to_le_bytes());
        }
        out
    }
}

/// A valid row: secp256k1 over the empty message (Keccak-256), record 0 of `chainsig gen --alg
/// secp256k1 --count 1 --seed 7 --msg-len 0`. The entry checks that it verifies.
const VALID_PUBKEY: &str = "041f3fe23d53c332dc22b11b8da56b7d17160ee750cec33375c2d658d24ea91d90\
                            bfb08dc3678599270dbf0c99a6bbdd53681c8ccc4d53940f864c20f05968f3aa";
const VALID_SIG: &str = "9871534e79d2ff14e736faa9b1de016095e8e2e01854d1d4ff4ef7900d08872d\
                         31cadbe3792aea9df417cba3bc40372618144c3c64d17791787c291288850c15";

fn valid_row() -> &'static [u8] {
    static ROW: OnceLock<Vec<u8>> = OnceLock::new();
    ROW.get_or_init(|| {
        let pubkey = hex::decode(VALID_PUBKEY).expect("hex");
        let sig: [u8; 64] = hex::decode(VALID_SIG).expect("hex").try_into().expect("64");
        Row {
            alg: chainsig_capi::CS_ALG_SECP256K1,
            flags: CS_FLAG_MESSAGE | CS_FLAG_TAG,
            pubkey: &pubkey,
            sig: &sig,
            payload: b"",
            id: b"",
            tag: Some(0x0123_4567_89ab_cdef),
        }
        .bytes()
    })
}

/// The process's CPU context, opened once (the library keeps it until the process ends).
fn context() -> *mut cs_context {
    static CONTEXT: OnceLock<usize> = OnceLock::new();
    let id = *CONTEXT.get_or_init(|| {
        let mut ctx = std::ptr::null_mut();
        let code = unsafe { cs_open(c"cpu".as_ptr(), std::ptr::null(), &mut ctx) };
        assert_eq!(code, CS_OK, "cs_open(cpu)");
        ctx as usize
    });
    id as *mut cs_context
}

/// The lengths of the rows at the start of `buf` by the documented layout, up to `n` of them,
/// stopping before the first row whose lengths run past the end.
fn frames(buf: &[u8], n: usize) -> Vec<usize> {
    let mut lens = Vec::new();
    let mut rest = buf;
    while lens.len() < n && rest.len() >= CS_ROW_HEADER_LEN {
        let h = &rest[..CS_ROW_HEADER_LEN];
        let msg_len = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as u64;
        let id_len = u64::from(u16::from_le_bytes([h[8], h[9]]));
        // A transaction row (CS_ALG_ETH_TX) has no r‖s field.
        let sig_len = if h[0] == CS_ALG_ETH_TX {
            0
        } else {
            CS_SIG_LEN as u64
        };
        let body = CS_ROW_HEADER_LEN as u64 + u64::from(h[10]) + sig_len + msg_len + id_len;
        let len = body.next_multiple_of(CS_ROW_ALIGN as u64)
            + if h[1] & CS_FLAG_TAG != 0 { 8 } else { 0 };
        if len > rest.len() as u64 {
            break;
        }
        lens.push(len as usize);
        rest = &rest[len as usize..];
    }
    lens
}

/// A row's outcome without the message, for comparing rows parsed in different batches.
fn outcome(row: &ParsedRow) -> Result<&(chainsig_core::record::VerifyRecord, bool), i32> {
    row.as_ref().map_err(|(code, _)| *code)
}

/// The entry the corpora are replayed with: every batch also goes through `cs_verify`.
pub fn packed_rows(data: &[u8]) {
    packed_rows_with(data, true)
}

/// The first byte picks the row count (1 to 16, its low four bits), the rest is the buffer; with
/// `verify`, the framed rows and a valid row after them also go through `cs_verify`. (The fuzz
/// target verifies one input in eight: a signature check per valid row costs some twenty times
/// the rest, and the parser should get most of the fuzzer's time.)
pub fn packed_rows_with(data: &[u8], verify: bool) {
    let Some((&count, buf)) = data.split_first() else {
        return;
    };
    let n = usize::from(count % 16) + 1;
    let lens = frames(buf, n);
    let framed = lens.len();
    let consumed: usize = lens.iter().sum();

    // The rows each alone: what the batch must say of them.
    let mut alone = Vec::with_capacity(framed);
    let mut at = 0;
    for &len in &lens {
        let mut rows = parse_rows(&buf[at..at + len], 1).expect("one framed row fills its buffer");
        assert_eq!(rows.len(), 1);
        alone.push(rows.remove(0));
        at += len;
    }
    for row in &alone {
        match row {
            Ok((record, low_s)) => {
                assert!(matches!(record.pubkey.len(), 33 | 65));
                // Written again (chainsig_core::rows::push_row, as `chainsig gen --rows` writes),
                // the record reads back the same: the writer and the reader agree on the layout.
                let mut again = Vec::new();
                chainsig_core::rows::push_row(&mut again, record, *low_s)
                    .expect("a record read from a row can be written as one");
                let back = parse_rows(&again, 1).expect("one row").remove(0);
                assert_eq!(back.as_ref().ok(), Some(&(record.clone(), *low_s)));
            }
            Err((code, why)) => {
                assert!(
                    [CS_REC_ALGORITHM, CS_REC_FORMAT, CS_REC_LENGTH].contains(code),
                    "a framed row refused with code {code}: {why}"
                );
                short(why);
            }
        }
    }

    match parse_rows(buf, n) {
        Ok(rows) => {
            assert_eq!(rows.len(), n, "a result per row");
            assert!(framed == n && consumed == buf.len() || framed < n);
            for (row, single) in rows.iter().zip(&alone) {
                assert_eq!(
                    outcome(row),
                    outcome(single),
                    "a row parses as it does alone"
                );
            }
            for (i, row) in rows.iter().enumerate().skip(framed) {
                let expected = if i == framed {
                    CS_REC_TRUNCATED
                } else {
                    CS_REC_UNREACHED
                };
                assert_eq!(
                    outcome(row).err(),
                    Some(expected),
                    "row {i} of {framed} framed"
                );
                short(&row.as_ref().unwrap_err().1);
            }
        }
        Err(failure) => {
            assert!(framed == n && consumed < buf.len(), "{failure:?}");
            assert_eq!(failure.code, CS_ERR_ARGUMENT);
            short(failure.message);
        }
    }

    // The framed rows with a valid row after them: the valid one is unaffected by what precedes.
    let mut batch = buf[..consumed].to_vec();
    batch.extend_from_slice(valid_row());
    let rows = parse_rows(&batch, framed + 1).expect("framed rows and a valid row fill the buffer");
    assert_eq!(rows.len(), framed + 1);
    for (row, single) in rows.iter().zip(&alone) {
        assert_eq!(outcome(row), outcome(single));
    }
    assert!(rows[framed].is_ok(), "the valid row: {:?}", rows[framed]);
    if verify {
        verify_batch(&batch, &rows);
    }
}

/// `cs_verify` on `batch` (copied to 8-byte-aligned memory) against its parse `rows`.
fn verify_batch(batch: &[u8], rows: &[ParsedRow]) {
    let n = rows.len();
    let mut words = vec![0u64; batch.len().div_ceil(8)];
    // SAFETY: the words own at least `batch.len()` bytes.
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), batch.len()) };
    bytes.copy_from_slice(batch);
    let mut bitmap = vec![u64::MAX; n.div_ceil(64)];
    let mut errors = vec![i32::MIN; n];
    let ctx = context();
    // SAFETY: the buffer, bitmap and errors are as long as the arguments say.
    let code = unsafe {
        cs_verify(
            ctx,
            words.as_ptr().cast(),
            batch.len(),
            n,
            bitmap.as_mut_ptr(),
            bitmap.len(),
            errors.as_mut_ptr(),
        )
    };
    // SAFETY: cs_last_error never returns NULL and its text lives until the next call.
    let message = unsafe { std::ffi::CStr::from_ptr(cs_last_error(ctx)) }.to_string_lossy();
    short(&message);
    if batch.len() / CS_ROW_MIN_LEN < n {
        // Short rows (keys of the wrong length) can make a buffer too small for its count.
        assert_eq!(code, CS_ERR_ARGUMENT, "{message}");
        assert!(
            bitmap.iter().all(|&w| w == 0),
            "a failed call leaves no verdict"
        );
        return;
    }
    assert_eq!(code, CS_OK, "{message}");
    for (i, row) in rows.iter().enumerate() {
        let bit = bitmap[i / 64] >> (i % 64) & 1;
        match row {
            Err((parse_code, _)) => assert_eq!(errors[i], *parse_code, "row {i}"),
            Ok(_) => assert!(errors[i] >= CS_OK, "row {i}: code {}", errors[i]),
        }
        if errors[i] != CS_OK {
            assert_eq!(bit, 0, "row {i} has an error and a valid bit");
        }
    }
    assert_eq!(errors[n - 1], CS_OK, "the valid row: {message}");
    assert_eq!(
        bitmap[(n - 1) / 64] >> ((n - 1) % 64) & 1,
        1,
        "the valid row verifies"
    );
    let last = bitmap.last().copied().unwrap_or(0);
    if n % 64 != 0 {
        assert_eq!(last >> (n % 64), 0, "bits past the rows are zero");
    }
}
