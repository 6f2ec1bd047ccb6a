package main

// The node's block loop. In "serial" mode a block is verified, then executed, as a node without
// offloading does. In "pipelined" mode the verification of the next `depth` blocks is started
// before a block executes, so verification runs during execution (the seed paper's design:
// submit early, pick the verdicts up when the block executes).

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Execution stands in for everything a node does with a block besides verifying signatures:
// running the transactions, consensus, storage. It costs execCost per transaction.
type Execution struct {
	PerTx time.Duration
	// Spin keeps one core busy for the time (a CPU-bound node); otherwise the goroutine sleeps
	// (a node waiting on I/O or on consensus rounds).
	Spin bool
}

func (e Execution) run(txs int) {
	cost := time.Duration(txs) * e.PerTx
	if cost <= 0 {
		return
	}
	if !e.Spin {
		time.Sleep(cost)
		return
	}
	for start := time.Now(); time.Since(start) < cost; {
	}
}

// Run is one pass of the mempool through the pipeline.
type Run struct {
	Backend string `json:"backend"`
	Mode    string `json:"mode"` // serial or pipelined
	Txs     int    `json:"txs"`
	Blocks  int    `json:"blocks"`
	Valid   int    `json:"valid"`
	Invalid int    `json:"invalid"`
	// Mismatches counts verdicts that differ from the mempool's expected ones: must be 0.
	Mismatches int     `json:"mismatches"`
	Seconds    float64 `json:"seconds"`
	TPS        float64 `json:"tps"`
	// Block latency: from the start of a block's verification to the end of its execution.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
	// VerifyWaitSeconds is the time the block loop spent starting verification and waiting for
	// verdicts (in serial mode, all of verification); ExecSeconds the time spent executing.
	VerifyWaitSeconds float64 `json:"verify_wait_seconds"`
	ExecSeconds       float64 `json:"exec_seconds"`
	// VerifyFraction is VerifyWaitSeconds / Seconds: the share of node time spent verifying.
	VerifyFraction float64 `json:"verify_fraction"`
}

// runPipeline passes every transaction of mp through v in blocks of blockSize.
func runPipeline(mp *Mempool, v Verifier, backend string, blockSize, depth int, exec Execution) (*Run, error) {
	n := len(mp.Txs)
	blocks := (n + blockSize - 1) / blockSize
	mode := "serial"
	if depth > 0 {
		mode = "pipelined"
	}
	run := &Run{Backend: backend, Mode: mode, Txs: n, Blocks: blocks}
	bounds := func(k int) (int, int) {
		lo, hi := k*blockSize, (k+1)*blockSize
		if hi > n {
			hi = n
		}
		return lo, hi
	}
	pending := make([]Pending, blocks)
	started := make([]time.Time, blocks)
	submit := func(k int) error {
		lo, hi := bounds(k)
		started[k] = time.Now()
		p, err := v.Start(lo, hi)
		if err != nil {
			return fmt.Errorf("block %d: %w", k, err)
		}
		pending[k] = p
		return nil
	}

	latencies := make([]float64, blocks)
	var waiting, executing time.Duration
	begin := time.Now()
	for k := 0; k < depth && k < blocks; k++ {
		if err := submit(k); err != nil {
			return nil, err
		}
	}
	for k := 0; k < blocks; k++ {
		t0 := time.Now()
		if depth == 0 {
			if err := submit(k); err != nil {
				return nil, err
			}
		}
		verdicts, err := pending[k].Wait()
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", k, err)
		}
		pending[k] = nil
		t1 := time.Now()
		waiting += t1.Sub(t0)
		if next := k + depth; depth > 0 && next < blocks {
			if err := submit(next); err != nil {
				return nil, err
			}
		}
		lo, hi := bounds(k)
		if len(verdicts) != hi-lo {
			return nil, fmt.Errorf("block %d: %d verdicts for %d transactions", k, len(verdicts), hi-lo)
		}
		for i, ok := range verdicts {
			if ok {
				run.Valid++
			} else {
				run.Invalid++
			}
			if ok != mp.Txs[lo+i].Want {
				run.Mismatches++
			}
		}
		t2 := time.Now()
		exec.run(hi - lo)
		t3 := time.Now()
		executing += t3.Sub(t2)
		latencies[k] = t3.Sub(started[k]).Seconds() * 1e3
	}
	elapsed := time.Since(begin)

	run.Seconds = elapsed.Seconds()
	run.TPS = float64(n) / run.Seconds
	run.VerifyWaitSeconds = waiting.Seconds()
	run.ExecSeconds = executing.Seconds()
	run.VerifyFraction = run.VerifyWaitSeconds / run.Seconds
	sort.Float64s(latencies)
	run.LatencyP50Ms = percentile(latencies, 0.50)
	run.LatencyP99Ms = percentile(latencies, 0.99)
	run.LatencyMaxMs = latencies[len(latencies)-1]
	return run, nil
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	if rank < 0 {
		rank = 0
	}
	return sorted[rank]
}
