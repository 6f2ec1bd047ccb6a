//! `chainsig kem …`: CTRU-Prime. The cryptography and the known-answer logic live in `chainsig-ctru`;
//! this module only parses arguments and formats answers.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use chainsig_ctru::kat::{check_all, parse_rsp};
use chainsig_ctru::zeroize::Zeroizing;
use chainsig_ctru::{decaps, encaps, keygen, Ciphertext, OsRandom, ParamSet, PublicKey, SecretKey};

fn parse_set(s: &str) -> Result<ParamSet, String> {
    s.parse::<ParamSet>().map_err(|e| e.to_string())
}

#[derive(clap::Subcommand)]
pub enum KemCommand {
    /// Check a NIST known-answer file: re-derive every record from its seed with the NIST DRBG and
    /// compare pk, sk, ct, ss and decapsulation. Exit status 1 when any record fails.
    Kat {
        /// Parameter set: 653, 761 or 1277.
        #[arg(long, value_parser = parse_set)]
        params: ParamSet,
        /// The `.rsp` file.
        file: PathBuf,
    },
    /// Generate a key pair with OS randomness; prints `{"pk":"…","sk":"…"}` (hex). The secret key is
    /// printed on stdout: redirect it to a protected file.
    Keygen {
        /// Parameter set: 653, 761 or 1277.
        #[arg(long, value_parser = parse_set)]
        params: ParamSet,
    },
    /// Encapsulate to a public key (hex); prints `{"ct":"…","ss":"…"}`.
    Encaps {
        /// Parameter set: 653, 761 or 1277.
        #[arg(long, value_parser = parse_set)]
        params: ParamSet,
        /// The public key, hex.
        #[arg(long)]
        pk: String,
    },
    /// Decapsulate a ciphertext (hex) with the secret key in a file (hex); prints `{"ss":"…"}`.
    Decaps {
        /// Parameter set: 653, 761 or 1277.
        #[arg(long, value_parser = parse_set)]
        params: ParamSet,
        /// File holding the secret key in hex.
        #[arg(long)]
        sk_file: PathBuf,
        /// The ciphertext, hex.
        #[arg(long)]
        ct: String,
    },
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(field: &str, text: &str) -> anyhow::Result<Vec<u8>> {
    let text = text.trim();
    let text = text.strip_prefix("0x").unwrap_or(text);
    anyhow::ensure!(text.len() % 2 == 0, "{field}: odd number of hex digits");
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .with_context(|| format!("{field}: invalid hex"))
        })
        .collect()
}

pub fn run(cmd: KemCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        KemCommand::Kat { params, file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", crate::input::shown(&file)))?;
            let records = parse_rsp(&text).with_context(|| format!("{}", file.display()))?;
            // A check that checked nothing must not pass.
            anyhow::ensure!(
                !records.is_empty(),
                "{}: no known-answer records (count = …, seed = …, pk = …): nothing was checked",
                file.display()
            );
            let report = check_all(params, &records);
            for outcome in &report.failed {
                println!("count {}: {}", outcome.count, outcome.failures.join(", "));
            }
            println!("{} passed, {} failed", report.passed, report.failed.len());
            Ok(if report.failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        KemCommand::Keygen { params } => {
            let (pk, sk) = keygen(params, &mut OsRandom);
            println!(
                "{{\"pk\":\"{}\",\"sk\":\"{}\"}}",
                to_hex(pk.as_bytes()),
                to_hex(sk.as_bytes())
            );
            Ok(ExitCode::SUCCESS)
        }
        KemCommand::Encaps { params, pk } => {
            let pk = PublicKey::from_bytes(params, &from_hex("pk", &pk)?)?;
            let (ct, ss) = encaps(&pk, &mut OsRandom);
            println!(
                "{{\"ct\":\"{}\",\"ss\":\"{}\"}}",
                to_hex(ct.as_bytes()),
                to_hex(ss.as_bytes())
            );
            Ok(ExitCode::SUCCESS)
        }
        KemCommand::Decaps {
            params,
            sk_file,
            ct,
        } => {
            let text = std::fs::read_to_string(&sk_file)
                .with_context(|| format!("cannot read {}", crate::input::shown(&sk_file)))?;
            let sk = SecretKey::from_bytes(params, &Zeroizing::new(from_hex("sk", &text)?))?;
            let ct = Ciphertext::from_bytes(params, &from_hex("ct", &ct)?)?;
            let ss = decaps(&sk, &ct)?;
            println!("{{\"ss\":\"{}\"}}", to_hex(ss.as_bytes()));
            Ok(ExitCode::SUCCESS)
        }
    }
}
