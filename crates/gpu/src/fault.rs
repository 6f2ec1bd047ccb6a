//! Fault injection in the CUDA runtime path: with the `fault-injection` feature (off by default,
//! never in release builds), the switch `CHAINSIG_GPU_FAULT` makes chosen kernel launches or
//! host↔device copies fail as the driver would, so a GPU run can show that a failed launch or
//! copy in the middle of a batch becomes a clean CPU fallback (or a clean error when the GPU was
//! asked for by name), with no verdict lost, duplicated or reordered.
//!
//! The switch holds terms separated by commas, `launch:N`, `launch:N-M`, `copy:N` or `copy:N-M`:
//! the Nth (to Mth) launch or copy of the process, counted from 1, fails with a device error
//! ("injected fault"). `CHAINSIG_GPU_FAULT=launch:3,copy:7` fails the third kernel launch and the
//! seventh copy. The call numbers follow `chainsig_core::fault`'s plans, which this reuses.
//!
//! The pipelines call [`check`] just before each launch and each copy; without the feature it is
//! an empty inline function.

#[cfg(not(feature = "fault-injection"))]
use crate::error::Error;

/// What a checked driver call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A kernel launch.
    Launch,
    /// A host-to-device or device-to-host copy.
    Copy,
}

/// Ok unless the switch chooses this call; `what` names the call in the error.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub fn check(_op: Op, _what: &'static str) -> Result<(), Error> {
    Ok(())
}

#[cfg(feature = "fault-injection")]
pub use switch::{arm, check, Plan};

#[cfg(feature = "fault-injection")]
mod switch {
    use super::Op;
    use crate::error::Error;
    use chainsig_core::fault::{Fault, FaultPlan};
    use std::sync::{Mutex, OnceLock};

    /// The launches and the copies to fail.
    #[derive(Debug, Clone, Default)]
    pub struct Plan {
        launch: FaultPlan,
        copy: FaultPlan,
    }

    impl Plan {
        /// Reads the switch's text (the module docs); an error names the term refused.
        pub fn parse(text: &str) -> Result<Plan, String> {
            let (mut launch, mut copy) = (Vec::new(), Vec::new());
            for term in text.split(',').map(str::trim) {
                match term.split_once(':') {
                    Some(("launch", calls)) => launch.push(calls),
                    Some(("copy", calls)) => copy.push(calls),
                    _ => {
                        return Err(format!(
                            "CHAINSIG_GPU_FAULT term {} (expected launch:N or copy:N)",
                            chainsig_core::error::quote(term)
                        ))
                    }
                }
            }
            let plan = |calls: Vec<&str>| {
                if calls.is_empty() {
                    Ok(FaultPlan::default())
                } else {
                    FaultPlan::parse(&calls.join(","))
                        .map_err(|e| format!("CHAINSIG_GPU_FAULT: {e}"))
                }
            };
            Ok(Plan {
                launch: plan(launch)?,
                copy: plan(copy)?,
            })
        }
    }

    /// The plan and the counts of launches and copies so far.
    struct State {
        plan: Plan,
        launches: u64,
        copies: u64,
    }

    fn state() -> &'static Mutex<State> {
        static STATE: OnceLock<Mutex<State>> = OnceLock::new();
        STATE.get_or_init(|| {
            let plan = match std::env::var("CHAINSIG_GPU_FAULT") {
                // A switch that does not read is a mistake in a test run: say so loudly.
                Ok(text) => Plan::parse(&text).unwrap_or_else(|e| panic!("{e}")),
                Err(_) => Plan::default(),
            };
            Mutex::new(State {
                plan,
                launches: 0,
                copies: 0,
            })
        })
    }

    /// Replaces the plan and starts counting again from 1 (for tests in one process).
    pub fn arm(plan: Plan) {
        let mut state = state().lock().unwrap_or_else(|e| e.into_inner());
        *state = State {
            plan,
            launches: 0,
            copies: 0,
        };
    }

    /// Counts one call of kind `op` and fails it when the plan chooses it.
    pub fn check(op: Op, what: &'static str) -> Result<(), Error> {
        let mut state = state().lock().unwrap_or_else(|e| e.into_inner());
        let (n, plan) = match op {
            Op::Launch => {
                state.launches += 1;
                (state.launches, &state.plan.launch)
            }
            Op::Copy => {
                state.copies += 1;
                (state.copies, &state.plan.copy)
            }
        };
        match plan.fault_for(n) {
            None => Ok(()),
            Some(Fault::Panic) => panic!("injected panic at {what} ({op:?} {n})"),
            Some(_) => Err(Error::Device {
                what,
                detail: format!("injected fault ({op:?} {n})"),
            }),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_chosen_launches_and_copies_fail() {
            arm(Plan::parse("launch:2, copy:1-2,copy:4").unwrap());
            let launches: Vec<bool> = (0..4).map(|_| check(Op::Launch, "l").is_ok()).collect();
            assert_eq!(launches, [true, false, true, true]);
            let copies: Vec<bool> = (0..5).map(|_| check(Op::Copy, "c").is_ok()).collect();
            assert_eq!(copies, [false, false, true, false, true]);
            let err = {
                arm(Plan::parse("launch:1").unwrap());
                check(Op::Launch, "kernel launch").unwrap_err()
            };
            assert_eq!(err.to_string(), "kernel launch: injected fault (Launch 1)");
            for bad in ["launch", "launch:0", "copy:x", "3", "kernel:1"] {
                assert!(Plan::parse(bad).is_err(), "{bad:?}");
            }
            arm(Plan::default());
        }
    }
}
