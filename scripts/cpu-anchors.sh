#!/usr/bin/env bash
# The CPU anchors beside chainsig's AVX-512 IFMA lanes, one core each, in one run, as one table:
#   - OpenSSL's `openssl speed ecdsap256` (P-256 verify; the nistz256 assembly on x86-64) and
#     `openssl speed sm2` where the system OpenSSL has SM2,
#   - libsecp256k1 (secp256k1 verify and ecrecover) through the `secp256k1` crate, measured by
#     chainsig-cpu's lanes bench in the same process as the lanes, rounds interleaved,
#   - chainsig's lanes and its one-at-a-time scalar path (`cargo bench -p chainsig-cpu --bench lanes`).
#   - GmSSL built from source (cmake, its default options) with scripts/anchors/gmssl_sm2_speed.c
#     linked against it: the tree named by GMSSL_SRC, else the GmSSL 3.1.1 release that the
#     crates.io package gmssl-rs-sys 0.1.0 carries (fetched with cargo into a scratch folder; no
#     other copy of GmSSL's source is reachable from the development machine). That release's SM2
#     is its generic C (sm2_alg.c), not the later z256 code behind the ≈ 16.7k/s the CPU issue
#     quotes, and the table says so.
#
# Usage: scripts/cpu-anchors.sh [seconds per OpenSSL test, default 3] [batch size, default 4096]
# Every program is pinned to CPU 0 (taskset) so that "per core" means one core. Read the ratios,
# not the absolute rates, on a shared machine: the table prints the load average it ran under.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-3}
SIZE=${2:-4096}

pin() {
    if command -v taskset >/dev/null; then taskset -c 0 "$@"; else "$@"; fi
}
ratio() { if [[ -n "${2:-}" && "${2:-0}" != 0 ]]; then awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f×", a/b}'; else echo "—"; fi; }
shown() { if [[ -n "${1:-}" ]]; then echo "$1/s"; else echo "not available here"; fi; }

# The lanes bench: built once (release), its binary found from cargo's JSON messages.
BENCH=$(cargo bench -p chainsig-cpu --bench lanes --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | tail -1 | sed 's/"executable":"//; s/"$//')
if [[ -z "$BENCH" || ! -x "$BENCH" ]]; then
    echo "could not build the lanes bench (cargo bench -p chainsig-cpu --bench lanes --no-run)" >&2
    exit 1
fi

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
OURS=$(pin "$BENCH" "$SIZE")
echo "$OURS" | grep -q "lanes" || { echo "$OURS" >&2; echo "the lanes bench printed no rates" >&2; exit 1; }

# "name: lanes N/s  <scalar> M/s  ratio R" → the two rates of the line whose name is $1.
rates() { echo "$OURS" | grep -E "^ *$1:" | grep -oE '[0-9]+/s' | tr -d '/s' | tr '\n' ' '; }
read -r SM2_L SM2_S <<<"$(rates sm2)"
read -r P256_L P256_S <<<"$(rates p256)"
read -r K1_L K1_S <<<"$(rates secp256k1)"
read -r REC_L REC_S <<<"$(rates ecrecover)"

# `openssl speed` prints "... sign/s verify/s" and the verify rate last on its result line.
openssl_verify() {
    pin openssl speed -seconds "$SECS" "$1" 2>/dev/null | grep -E "$2" | awk '{print int($NF)}' | tail -1
}
OSSL_VERSION=$(openssl version 2>/dev/null | cut -d' ' -f1-2 || echo "no openssl")
OSSL_P256=$(openssl_verify ecdsap256 'nistp256' || true)
OSSL_SM2=$(openssl_verify sm2 'SM2' || true)
# GmSSL from source: its SM2 rates through scripts/anchors/gmssl_sm2_speed.c.
gmssl_source() {
    if [[ -n "${GMSSL_SRC:-}" ]]; then echo "$GMSSL_SRC"; return; fi
    local scratch=${TMPDIR:-/tmp}/chainsig-gmssl-fetch
    mkdir -p "$scratch/src"
    [[ -f "$scratch/src/lib.rs" ]] || : > "$scratch/src/lib.rs"
    printf '[package]\nname = "gmssl-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\ngmssl-rs-sys = "=0.1.0"\n' \
        > "$scratch/Cargo.toml"
    (cd "$scratch" && cargo fetch -q >/dev/null 2>&1) || return 1
    cargo metadata -q --format-version 1 --manifest-path "$scratch/Cargo.toml" 2>/dev/null |
        grep -o '"manifest_path":"[^"]*gmssl-rs-sys-0.1.0/Cargo.toml"' | head -1 |
        sed 's/"manifest_path":"//; s#/Cargo.toml"$#/GmSSL#'
}
GMSSL_ROW="not built (cmake, a C compiler and GmSSL's source are needed)"
GMSSL_NAME="GmSSL"
GMSSL_VERIFY=""
GMSSL_SIGN=""
if command -v cmake >/dev/null && command -v cc >/dev/null && SRC=$(gmssl_source) && [[ -d "$SRC" ]]; then
    BUILD=${TMPDIR:-/tmp}/chainsig-gmssl-build
    if cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF >/dev/null 2>&1 &&
        make -C "$BUILD" -j"$(nproc)" gmssl >/dev/null 2>&1 &&
        cc -O2 -I"$SRC/include" scripts/anchors/gmssl_sm2_speed.c "$BUILD/bin/libgmssl.a" \
            -o "$BUILD/gmssl_sm2_speed"; then
        GMSSL_VERSION=$(grep -o 'GMSSL_VERSION_STR[^"]*"[^"]*"' "$SRC/include/gmssl/version.h" |
            cut -d'"' -f2)
        GMSSL_NAME="${GMSSL_VERSION:-GmSSL} from source ($(basename "$(dirname "$SRC")"))"
        LINE=$(pin "$BUILD/gmssl_sm2_speed" "$SIZE" 2>/dev/null | grep '^gmssl sm2:')
        GMSSL_SIGN=$(echo "$LINE" | grep -oE 'sign [0-9]+' | cut -d' ' -f2)
        GMSSL_VERIFY=$(echo "$LINE" | grep -oE 'verify [0-9]+' | cut -d' ' -f2)
        if [[ -f "$SRC/src/sm2_z256.c" ]]; then
            GMSSL_ROW="$(shown "$GMSSL_VERIFY")"
        else
            GMSSL_ROW="$(shown "$GMSSL_VERIFY") (its generic sm2_alg.c: no z256 code in this release)"
        fi
    fi
fi


echo "CPU anchors, one core (CPU 0), $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), batch $SIZE, openssl -seconds $SECS, load average $LOAD_BEFORE → $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| per core | chainsig lanes | anchor | anchor rate | lanes ÷ anchor |"
echo "| --- | ---: | --- | ---: | ---: |"
echo "| SM2 verify | $SM2_L/s | $OSSL_VERSION \`speed sm2\` | $(shown "$OSSL_SM2") | $(ratio "$SM2_L" "$OSSL_SM2") |"
echo "| SM2 verify | $SM2_L/s | $GMSSL_NAME | $GMSSL_ROW | $(ratio "$SM2_L" "$GMSSL_VERIFY") |"
echo "| SM2 sign | (scripts/sign-lanes.sh) | $GMSSL_NAME | $(shown "$GMSSL_SIGN") | — |"
echo "| SM2 verify | $SM2_L/s | chainsig scalar 4×64 | $SM2_S/s | $(ratio "$SM2_L" "$SM2_S") |"
echo "| P-256 verify | $P256_L/s | $OSSL_VERSION \`speed ecdsap256\` | $(shown "$OSSL_P256") | $(ratio "$P256_L" "$OSSL_P256") |"
echo "| P-256 verify | $P256_L/s | chainsig scalar 4×64 | $P256_S/s | $(ratio "$P256_L" "$P256_S") |"
echo "| secp256k1 verify | $K1_L/s | libsecp256k1 (\`secp256k1\` crate) | $K1_S/s | $(ratio "$K1_L" "$K1_S") |"
echo "| ecrecover (EIP-2 low s) | $REC_L/s | libsecp256k1 \`recover_ecdsa\` | $REC_S/s | $(ratio "$REC_L" "$REC_S") |"
