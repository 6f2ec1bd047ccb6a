//! `chainsig loadtest` through the built binary, against its in-process server: small bounded runs
//! of both scenarios finish with every answer correct, and the JSON report has its fields; hosts
//! off loopback are refused before anything is sent.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn chainsig() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chainsig"))
}

fn report_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "chainsig-loadtest-{tag}-{}.json",
        std::process::id()
    ))
}

fn run_json(tag: &str, args: &[&str]) -> Value {
    let path = report_path(tag);
    let _ = std::fs::remove_file(&path);
    let output = chainsig()
        .arg("loadtest")
        .args(args)
        .arg("--json")
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert!(stdout.contains("requests/s"), "{stdout}");
    assert!(stdout.contains("p99.9"), "{stdout}");
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    serde_json::from_str(&text).unwrap()
}

fn check_latencies(report: &Value) {
    let lat = &report["latency_us"];
    let (p50, p99, p999, max) = (
        lat["p50"].as_u64().unwrap(),
        lat["p99"].as_u64().unwrap(),
        lat["p999"].as_u64().unwrap(),
        lat["max"].as_u64().unwrap(),
    );
    assert!(
        p50 >= 1 && p50 <= p99 && p99 <= p999 && p999 <= max,
        "{lat}"
    );
    assert!(lat["mean"].as_f64().unwrap() > 0.0);
    assert!(report["elapsed_s"].as_f64().unwrap() > 0.0);
    assert!(report["requests_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn sign_scenario_in_process_has_no_errors_and_no_losses() {
    let report = run_json(
        "sign",
        &[
            "--scenario",
            "sign",
            "--requests",
            "500",
            "--connections",
            "8",
            "--duration-secs",
            "120",
        ],
    );
    assert_eq!(report["scenario"], "sign");
    assert_eq!(report["in_process_server"], true);
    assert_eq!(report["connections"], 8);
    assert_eq!(report["stopped_by"], "requests");
    assert_eq!(report["sent"], 500);
    assert_eq!(report["ok"], 500);
    assert_eq!(report["errors"], 0);
    assert_eq!(report["lost"], 0);
    assert_eq!(report["records_per_request"], 1);
    assert!(report["first_problem"].is_null());
    assert!(report["url"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));
    check_latencies(&report);
}

#[test]
fn verify_scenario_checks_verdicts_against_the_generator() {
    for alg in ["sm2", "secp256k1"] {
        let report = run_json(
            alg,
            &[
                "--scenario",
                "verify",
                "--alg",
                alg,
                "--batch",
                "16",
                "--requests",
                "40",
                "--connections",
                "4",
            ],
        );
        assert_eq!(report["scenario"], "verify");
        assert_eq!(report["ok"], 40, "{alg}: {report}");
        assert_eq!(report["errors"], 0);
        assert_eq!(report["lost"], 0);
        assert_eq!(report["records_per_request"], 16);
        check_latencies(&report);
    }
}

#[test]
fn a_time_bound_stops_the_run() {
    // Far more requests than one second allows: the duration ends it.
    let report = run_json(
        "duration",
        &[
            "--scenario",
            "sign",
            "--requests",
            "100000000",
            "--duration-secs",
            "1",
            "--connections",
            "2",
        ],
    );
    assert_eq!(report["stopped_by"], "duration");
    assert!(report["elapsed_s"].as_f64().unwrap() < 30.0);
    assert_eq!(report["errors"], 0);
    assert_eq!(report["lost"], 0);
}

#[test]
fn hosts_off_loopback_are_refused() {
    for url in ["http://192.0.2.1:8545", "http://example.com/"] {
        let output = chainsig()
            .args([
                "loadtest",
                "--scenario",
                "sign",
                "--requests",
                "1",
                "--url",
                url,
            ])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{url}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("not a loopback address"), "{url}: {stderr}");
    }
}

#[test]
fn grpc_sign_scenario_checks_every_streamed_answer() {
    let report = run_json(
        "grpc",
        &[
            "--scenario",
            "grpc-sign",
            "--requests",
            "3000",
            "--connections",
            "2",
            "--in-flight",
            "256",
            "--duration-secs",
            "120",
        ],
    );
    assert_eq!(report["scenario"], "grpc-sign");
    assert_eq!(report["in_process_server"], true);
    assert_eq!(report["connections"], 2);
    assert_eq!(report["stopped_by"], "requests");
    assert_eq!(report["sent"], 3000);
    assert_eq!(report["ok"], 3000, "{report}");
    assert_eq!(report["errors"], 0);
    assert_eq!(report["lost"], 0);
    assert_eq!(report["records_per_request"], 1);
    assert!(report["first_problem"].is_null());
    check_latencies(&report);
}

#[test]
fn grpc_sign_scenario_is_bounded_in_time() {
    let report = run_json(
        "grpc-duration",
        &[
            "--scenario",
            "grpc-sign",
            "--requests",
            "100000000",
            "--duration-secs",
            "1",
            "--connections",
            "1",
        ],
    );
    assert_eq!(report["stopped_by"], "duration");
    assert!(report["elapsed_s"].as_f64().unwrap() < 30.0);
    assert!(report["ok"].as_u64().unwrap() > 0);
    assert_eq!(report["errors"], 0);
    assert_eq!(report["lost"], 0);
    assert_eq!(report["sent"], report["ok"]);
}
