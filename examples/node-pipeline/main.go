// Command node-pipeline measures what in-process batch verification gives a blockchain node.
//
// It generates a mempool of signed transactions (SM2 signed with tjfoc/gmsm under per-account
// signer ids, Ethereum-style secp256k1 records signed with btcec and recovered, or P-256 signed
// with crypto/ecdsa), a known fraction of them corrupted; cuts it into blocks; and runs a node's
// block loop: verify a block, then execute it at a configured cost a transaction (standing in for
// execution and consensus). Verification runs on Go's own libraries on every core (goroutines),
// or through chainsig's Go binding on its CPU or CUDA backend, either before each block executes
// ("serial") or submitted asynchronously for the next block while the current one executes
// ("pipelined", the seed paper's design). Every verdict is checked against the mempool's.
//
// It reports TPS and block latency, and recomputes the seed paper's Amdahl analysis (there,
// verification was about 30% of a Hyperchain node's time and offloading it gave +15.81% TPS)
// from the measured figures. See run.sh to build it.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

type config struct {
	Alg       string  `json:"alg"`
	Txs       int     `json:"txs"`
	Block     int     `json:"block"`
	ExecUs    float64 `json:"exec_us"`
	ExecAuto  bool    `json:"exec_auto"`
	Exec      string  `json:"exec"`
	Backends  string  `json:"backends"`
	Modes     string  `json:"modes"`
	Depth     int     `json:"depth"`
	Threads   int     `json:"threads"`
	Signers   int     `json:"signers"`
	Bad       float64 `json:"bad_fraction"`
	Seed      int64   `json:"seed"`
	CPUs      int     `json:"cpus"`
	GoVersion string  `json:"go_version"`
}

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "node-pipeline:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	var cfg config
	var execUs, jsonPath string
	var requireCuda bool
	flag.StringVar(&cfg.Alg, "alg", "sm2", "signature scheme: sm2, secp256k1 (Ethereum sender recovery) or p256")
	flag.IntVar(&cfg.Txs, "txs", 20000, "transactions in the mempool")
	flag.IntVar(&cfg.Block, "block", 2000, "transactions a block")
	flag.StringVar(&execUs, "exec-us", "auto", "execution cost a transaction in µs, or auto: set so that Go verification is 30% of node time, as the paper measured")
	flag.StringVar(&cfg.Exec, "exec", "spin", "how execution spends its time: spin (one core busy) or sleep")
	flag.StringVar(&cfg.Backends, "backend", "all", "go, cpu, cuda, all, or a comma list")
	flag.StringVar(&cfg.Modes, "mode", "both", "serial, pipelined or both")
	flag.IntVar(&cfg.Depth, "depth", 1, "pipelined: blocks verified ahead of the one executing")
	flag.IntVar(&cfg.Threads, "threads", runtime.NumCPU(), "Go verification goroutines; also chainsig's CPU threads (RAYON_NUM_THREADS) when given")
	flag.IntVar(&cfg.Signers, "signers", 256, "distinct signing accounts")
	flag.Float64Var(&cfg.Bad, "bad", 0.01, "fraction of transactions corrupted after signing")
	flag.Int64Var(&cfg.Seed, "seed", 1, "random seed of the mempool")
	flag.StringVar(&jsonPath, "json", "", "also write the results as JSON to this file")
	flag.BoolVar(&requireCuda, "require-cuda", false, "fail, rather than skip, when the cuda backend cannot open")
	flag.Parse()
	cfg.CPUs, cfg.GoVersion = runtime.NumCPU(), runtime.Version()

	backends, modes, err := parseChoices(&cfg)
	if err != nil {
		return err
	}
	if cfg.Txs < 1 || cfg.Block < 1 || cfg.Depth < 1 || cfg.Threads < 1 || cfg.Signers < 1 || cfg.Bad < 0 || cfg.Bad > 1 {
		return fmt.Errorf("--txs, --block, --depth, --threads and --signers must be at least 1, --bad in [0, 1]")
	}
	if cfg.Exec != "spin" && cfg.Exec != "sleep" {
		return fmt.Errorf("--exec %q: expected spin or sleep", cfg.Exec)
	}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "threads" && os.Getenv("RAYON_NUM_THREADS") == "" {
			// Read by the library's thread pool when it starts (in the first chainsig call).
			os.Setenv("RAYON_NUM_THREADS", strconv.Itoa(cfg.Threads))
		}
	})

	start := time.Now()
	mp, err := generate(cfg.Alg, cfg.Txs, cfg.Signers, cfg.Bad, cfg.Seed)
	if err != nil {
		return err
	}
	fmt.Printf("mempool: %d %s transactions from %d signers, %d corrupted, generated in %.1f s\n",
		len(mp.Txs), cfg.Alg, cfg.Signers, mp.Corrupt, time.Since(start).Seconds())

	goV := newGoVerifier(mp, cfg.Threads)
	if execUs == "auto" {
		cfg.ExecAuto = true
		perTx, err := goVerifyPerTx(mp, goV, cfg.Block)
		if err != nil {
			return err
		}
		// Verification v and execution e a transaction with v / (v + e) = 0.3: e = v · 7/3.
		cfg.ExecUs = perTx.Seconds() * 1e6 * 7 / 3
	} else if cfg.ExecUs, err = strconv.ParseFloat(execUs, 64); err != nil || cfg.ExecUs < 0 {
		return fmt.Errorf("--exec-us %q: expected a number of µs (at least 0) or auto", execUs)
	}
	exec := Execution{PerTx: time.Duration(cfg.ExecUs * 1e3), Spin: cfg.Exec == "spin"}

	rep := &report{Config: cfg}
	for _, b := range backends {
		var v Verifier = goV
		name := "go"
		if b != "go" {
			name = "chainsig-" + b
			cv, err := newChainsigVerifier(mp, b)
			if err != nil {
				if b == "cuda" && !requireCuda {
					rep.Skipped = append(rep.Skipped, skip{Backend: name, Reason: err.Error()})
					fmt.Printf("%s: skipped, it cannot open here: %v\n", name, err)
					continue
				}
				return fmt.Errorf("%s: %w", name, err)
			}
			v = cv
		}
		// One block first, untimed: thread pools, GPU kernels and tables start here.
		if err := warm(v, cfg.Block, len(mp.Txs)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, depth := range modes {
			run, err := runPipeline(mp, v, name, cfg.Block, depth, exec)
			if err != nil {
				v.Close()
				return fmt.Errorf("%s: %w", name, err)
			}
			rep.Runs = append(rep.Runs, run)
			fmt.Printf("  %-13s %-9s %9.0f tx/s  (%d mismatches)\n", run.Backend, run.Mode, run.TPS, run.Mismatches)
		}
		v.Close()
	}
	rep.analyse()
	rep.print(os.Stdout)
	if jsonPath != "" {
		if err := rep.writeJSON(jsonPath); err != nil {
			return err
		}
	}
	if rep.Mismatches > 0 {
		return fmt.Errorf("%d verdicts differ from the mempool's expected ones", rep.Mismatches)
	}
	return nil
}

// parseChoices turns --backend and --mode into backends in order and pipeline depths
// (0: serial).
func parseChoices(cfg *config) ([]string, []int, error) {
	var backends []string
	for _, b := range strings.Split(cfg.Backends, ",") {
		switch b = strings.TrimSpace(b); b {
		case "all":
			backends = append(backends, "go", "cpu", "cuda")
		case "go", "cpu", "cuda":
			backends = append(backends, b)
		default:
			return nil, nil, fmt.Errorf("--backend %q: expected go, cpu, cuda or all", b)
		}
	}
	switch cfg.Modes {
	case "serial":
		return backends, []int{0}, nil
	case "pipelined":
		return backends, []int{cfg.Depth}, nil
	case "both":
		return backends, []int{0, cfg.Depth}, nil
	}
	return nil, nil, fmt.Errorf("--mode %q: expected serial, pipelined or both", cfg.Modes)
}

func warm(v Verifier, block, n int) error {
	if block > n {
		block = n
	}
	p, err := v.Start(0, block)
	if err != nil {
		return err
	}
	_, err = p.Wait()
	return err
}

// goVerifyPerTx times Go's verification of the first block (after one untimed pass) and
// returns the time a transaction.
func goVerifyPerTx(mp *Mempool, v Verifier, block int) (time.Duration, error) {
	if block > len(mp.Txs) {
		block = len(mp.Txs)
	}
	if err := warm(v, block, len(mp.Txs)); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := warm(v, block, len(mp.Txs)); err != nil {
		return 0, err
	}
	return time.Since(start) / time.Duration(block), nil
}
