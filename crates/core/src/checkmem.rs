//! Secret marking for the constant-time check, after libsecp256k1's `checkmem.h`.
//!
//! Valgrind's memcheck tracks, bit by bit, whether each value is "defined". Marking a secret's bytes
//! undefined ([`classify`]) makes memcheck report every conditional branch and every memory address
//! computed from it: exactly the two channels through which timing can depend on a secret on a
//! CPU without secret-dependent instruction latency. Values that are meant to become public (a
//! signature, whether a nonce was usable) are marked defined again ([`declassify`]) before they are
//! branched on or shown. The check itself is chainsig-testkit's `ctime` binary, run under
//! `valgrind --error-exitcode=1` by CI (see RELIABILITY.md).
//!
//! The marks are valgrind "client requests": a fixed sequence of rotations of `rdi` by 3, 13, 61
//! and 51 bits (128 in all, so it changes nothing) followed by `xchg rbx, rbx`, which the valgrind
//! CPU recognises and a real CPU runs as a handful of no-ops. That is the encoding valgrind.h uses
//! on amd64; written here in Rust so that no valgrind headers are needed to build. On other
//! architectures the functions do nothing, and the check is not run there.

/// Memcheck's request codes (`VG_USERREQ_TOOL_BASE('M','C') + 1` and `+ 2` in memcheck.h) and
/// valgrind's own "is this running under valgrind" request.
const MAKE_MEM_UNDEFINED: u64 = 0x4d43_0001;
const MAKE_MEM_DEFINED: u64 = 0x4d43_0002;
const RUNNING_ON_VALGRIND: u64 = 0x1001;

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn client_request(default: u64, request: u64, arg1: u64, arg2: u64) -> u64 {
    let args: [u64; 6] = [request, arg1, arg2, 0, 0, 0];
    let mut result = default;
    // SAFETY: outside valgrind the rotations net to nothing and `xchg rbx, rbx` is a no-op; under
    // valgrind the request reads the six words at `args`, which outlive the block.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            inout("rdx") result,
            in("rax") args.as_ptr(),
            inout("rdi") 0u64 => _,
            options(nostack, preserves_flags),
        );
    }
    result
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn client_request(default: u64, _request: u64, _arg1: u64, _arg2: u64) -> u64 {
    default
}

/// Whether the program runs under valgrind (false outside it, and on other architectures).
pub fn running_on_valgrind() -> bool {
    client_request(0, RUNNING_ON_VALGRIND, 0, 0) != 0
}

/// Marks the bytes of `value` secret: under memcheck, any branch or address computed from them is
/// reported. Does nothing outside valgrind.
#[inline(always)]
pub fn classify<T: ?Sized>(value: &T) {
    let len = core::mem::size_of_val(value) as u64;
    client_request(
        0,
        MAKE_MEM_UNDEFINED,
        value as *const T as *const u8 as u64,
        len,
    );
}

/// Marks the bytes of `value` public again (an output, or a bit that is public by design). Does
/// nothing outside valgrind.
#[inline(always)]
pub fn declassify<T: ?Sized>(value: &T) {
    let len = core::mem::size_of_val(value) as u64;
    client_request(
        0,
        MAKE_MEM_DEFINED,
        value as *const T as *const u8 as u64,
        len,
    );
}

/// `bit`, declared public: for the accept/reject decisions of constant-time code (a nonce that
/// gives r = 0, a secret key out of range), whose value is revealed by design but is computed from
/// secrets. Libsecp256k1 declassifies the same decisions in its signing code.
#[inline(always)]
pub fn public_bit(bit: bool) -> bool {
    // The value is marked in memory and read back from there, never from a register copy that
    // still carries memcheck's "undefined" shadow.
    let cell = core::hint::black_box(bit);
    declassify(&cell);
    // SAFETY: a read of a live local.
    unsafe { core::ptr::read_volatile(&cell) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outside valgrind every request returns its default and changes nothing.
    #[test]
    fn requests_are_no_ops_outside_valgrind() {
        assert!(!running_on_valgrind());
        let secret = [7u8; 32];
        classify(&secret);
        declassify(&secret);
        assert_eq!(secret, [7u8; 32]);
        assert!(public_bit(true));
        assert!(!public_bit(false));
    }
}
