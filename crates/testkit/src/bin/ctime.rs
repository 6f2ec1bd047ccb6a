//! `ctime`: the constant-time check of SM2 signing and of the secp256k1 signing path (see
//! `chainsig_testkit::ctime`). Meaningful only under valgrind:
//!
//! ```text
//! valgrind --error-exitcode=1 --track-origins=yes target/debug/ctime
//! valgrind --error-exitcode=1 target/debug/ctime --self-test-leak   # must fail
//! ```

use chainsig_testkit::ctime;
use std::process::ExitCode;

/// Keys per signer: each round makes fresh secrets, so a leak on a rare path is likelier seen.
const ROUNDS: usize = 16;

fn main() -> ExitCode {
    if !chainsig_core::checkmem::running_on_valgrind() {
        eprintln!("ctime: run under valgrind (valgrind --error-exitcode=1 ctime); outside it the secret marks do nothing");
        return ExitCode::from(2);
    }
    if std::env::args().any(|a| a == "--self-test-leak") {
        println!(
            "ctime: deliberate leak computed {:#x}; memcheck must report it",
            ctime::self_test_leak()
        );
        return ExitCode::SUCCESS;
    }
    let mut failed = false;
    for (name, result) in [
        (
            "SM2 signing (chainsig-weierstrass)",
            ctime::sm2_signing(ROUNDS),
        ),
        (
            "secp256k1 signing (chainsig-eth, libsecp256k1)",
            ctime::secp256k1_signing(ROUNDS),
        ),
    ] {
        match result {
            Ok(n) => {
                println!("ctime: {name}: {n} signatures made with secrets marked, all verified")
            }
            Err(e) => {
                eprintln!("ctime: {name}: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
