//! NVRTC: the options every module is compiled with, compilation straight to CUBIN for the
//! device's architecture (`--gpu-architecture=sm_XY`, so the driver never JIT-compiles PTX), the
//! disk cache in front of it ([`crate::cache`]), and ptxas's resource report.

use crate::cache;
use crate::driver::nvrtc_available;

/// NVRTC options for an architecture such as "sm_90", plus the words of `CHAINSIG_NVRTC_DEFINES`
/// (for example `-DCS_RARE_CALL`): compile-time ablations of the kernels, measured without a
/// rebuild of the binary. They are part of the cache key like every other option.
pub fn options(arch: &str) -> Vec<String> {
    let mut opts = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".into(),
        "--ptxas-options=-v".into(),
    ];
    if let Ok(extra) = std::env::var("CHAINSIG_NVRTC_DEFINES") {
        opts.extend(extra.split_whitespace().map(str::to_string));
    }
    opts
}

/// A compiled module and what ptxas said about it.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub log: String,
    pub from_cache: bool,
}

/// Registers, stack and spills of one kernel, read from the ptxas report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resources {
    pub kernel: String,
    pub registers: u32,
    pub stack_bytes: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

fn number_before(line: &str, marker: &str) -> Option<u32> {
    let idx = line.find(marker)?;
    line[..idx].split_whitespace().last()?.parse().ok()
}

/// Parses ptxas `-v` output ("Compiling entry function 'x'", "N bytes stack frame, N bytes spill
/// stores, N bytes spill loads", "Used N registers").
pub fn parse_resources(log: &str) -> Vec<Resources> {
    let mut out: Vec<Resources> = Vec::new();
    for line in log.lines() {
        if let Some(pos) = line.find("Compiling entry function '") {
            let rest = &line[pos + "Compiling entry function '".len()..];
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(Resources {
                kernel: name,
                registers: 0,
                stack_bytes: 0,
                spill_stores: 0,
                spill_loads: 0,
            });
        } else if let Some(cur) = out.last_mut() {
            if let Some(v) = number_before(line, "bytes stack frame") {
                cur.stack_bytes = v;
            }
            if let Some(v) = number_before(line, "bytes spill stores") {
                cur.spill_stores = v;
            }
            if let Some(v) = number_before(line, "bytes spill loads") {
                cur.spill_loads = v;
            }
            if let Some(v) = number_before(line, "registers") {
                cur.registers = v;
            }
        }
    }
    out
}

/// Compiles with NVRTC (no cache).
pub fn compile_uncached(src: &str, opts: &[String]) -> Result<Compiled, String> {
    use cudarc::nvrtc::{result, sys};
    if !nvrtc_available() {
        return Err("the NVRTC library (libnvrtc.so) cannot be loaded: install the CUDA toolkit or the nvidia-cuda-nvrtc wheel and put its lib/ on LD_LIBRARY_PATH".into());
    }
    let csrc =
        std::ffi::CString::new(src).map_err(|_| "kernel source holds a NUL byte".to_string())?;
    let prog =
        result::create_program(&csrc, None).map_err(|e| format!("nvrtcCreateProgram: {e:?}"))?;
    // SAFETY: prog was created above and is destroyed exactly once below.
    let compiled = unsafe { result::compile_program(prog, opts) };
    // SAFETY: as above.
    let log_raw = unsafe { result::get_program_log(prog) }.unwrap_or_default();
    let log = {
        let bytes: Vec<u8> = log_raw
            .iter()
            .take_while(|c| **c != 0)
            .map(|c| *c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let out = match compiled {
        Err(e) => Err(format!("NVRTC compilation failed ({e:?}):\n{log}")),
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: prog compiled successfully; the buffer has the size NVRTC reports.
            unsafe {
                let r = sys::nvrtcGetCUBINSize(prog, &mut size);
                if r != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
                    let _ = result::destroy_program(prog);
                    return Err(format!(
                        "nvrtcGetCUBINSize: {r:?} (was an sm_XY architecture given?)"
                    ));
                }
                let mut cubin = vec![0u8; size];
                let r = sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut std::ffi::c_char);
                if r != sys::nvrtcResult::NVRTC_SUCCESS {
                    let _ = result::destroy_program(prog);
                    return Err(format!("nvrtcGetCUBIN: {r:?}"));
                }
                Ok(Compiled {
                    cubin,
                    log,
                    from_cache: false,
                })
            }
        }
    };
    // SAFETY: prog is valid and not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

/// Compiles through the disk cache: a hit needs no NVRTC at all.
pub fn compile_cached(src: &str, arch: &str) -> Result<Compiled, String> {
    compile_cached_with(src, arch, options(arch))
}

/// As [`compile_cached`] with explicit options.
///
/// Each module is compiled at most once per process: a second device of the same architecture
/// (several GPUs, or several logical shards of one) takes it from memory, and one that asks while
/// another thread compiles it waits for that compilation rather than running NVRTC again (a
/// minute or more for an ECDSA module). This also holds where the disk cache cannot be written.
/// A failed compilation is not remembered.
pub fn compile_cached_with(src: &str, arch: &str, opts: Vec<String>) -> Result<Compiled, String> {
    let key = cache::cache_key(src, &opts, arch);
    once_per_process(&key, || match cache::load(&key) {
        Some((cubin, log)) => Ok(Compiled {
            cubin,
            log,
            from_cache: true,
        }),
        None => {
            let compiled = compile_uncached(src, &opts)?;
            cache::store(&key, &compiled.cubin, &compiled.log);
            Ok(compiled)
        }
    })
}

/// The module of `key` as `make` gives it the first time it succeeds in this process, and from
/// memory (marked as from a cache) every later time; callers for the same key wait for one
/// another, so `make` never runs twice at once for a key.
fn once_per_process(
    key: &str,
    make: impl FnOnce() -> Result<Compiled, String>,
) -> Result<Compiled, String> {
    let slot = in_memory(key);
    let mut slot = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(done) = slot.as_ref() {
        return Ok(Compiled {
            from_cache: true,
            ..done.clone()
        });
    }
    let compiled = make()?;
    *slot = Some(compiled.clone());
    Ok(compiled)
}

/// The module of `key` compiled or loaded by this process, behind a lock of its own (held while
/// it is being compiled, so that other threads asking for the same module wait for it).
fn in_memory(key: &str) -> std::sync::Arc<std::sync::Mutex<Option<Compiled>>> {
    type Slots =
        std::collections::HashMap<String, std::sync::Arc<std::sync::Mutex<Option<Compiled>>>>;
    static MODULES: std::sync::OnceLock<std::sync::Mutex<Slots>> = std::sync::OnceLock::new();
    let mut modules = MODULES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    modules.entry(key.to_string()).or_default().clone()
}

#[cfg(test)]
mod memo_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_module_is_made_once_per_process_while_others_wait_and_failures_are_not_kept() {
        let made = AtomicUsize::new(0);
        let make = || {
            made.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(30));
            Ok(Compiled {
                cubin: vec![1, 2, 3],
                log: "ptxas".into(),
                from_cache: false,
            })
        };
        let answers: Vec<Compiled> = std::thread::scope(|scope| {
            let jobs: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| once_per_process("memo-test-key", make).unwrap()))
                .collect();
            jobs.into_iter().map(|j| j.join().unwrap()).collect()
        });
        assert_eq!(
            made.load(Ordering::SeqCst),
            1,
            "compiled once for four engines"
        );
        assert!(answers.iter().all(|c| c.cubin == [1, 2, 3]));
        assert_eq!(answers.iter().filter(|c| !c.from_cache).count(), 1);
        // A failure is reported and not remembered: the next call tries again.
        let fail = once_per_process("memo-test-failing", || Err("nvrtc: error".into()));
        assert_eq!(fail.unwrap_err(), "nvrtc: error");
        let again = once_per_process("memo-test-failing", make).unwrap();
        assert_eq!(again.cubin, [1, 2, 3]);
    }
}
