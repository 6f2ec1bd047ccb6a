package main

// The results: a table for people, JSON for tools, and the seed paper's Amdahl analysis
// recomputed from what was measured.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
)

// The seed paper's figures for a Hyperchain node: verification about 30% of node time,
// +15.81% TPS with verification offloaded to a GPU.
const (
	paperFraction = 0.30
	paperGain     = 0.1581
)

type skip struct {
	Backend string `json:"backend"`
	Reason  string `json:"reason"`
}

// offload compares one chainsig backend with Go verification in serial mode (the baseline node).
type offload struct {
	Backend string `json:"backend"`
	// VerifySpeedup s: Go's serial verification time over this backend's.
	VerifySpeedup float64 `json:"verify_speedup"`
	// AmdahlGain: 1 / ((1 − f) + f / s) − 1, verification sped up s times and still in series.
	AmdahlGain float64 `json:"amdahl_predicted_gain"`
	// OverlapGain: (V + E) / max(E, V / s) − 1, verification hidden behind execution (the
	// pipelined steady state, without the first block's fill).
	OverlapGain        float64  `json:"overlap_predicted_gain"`
	MeasuredSerialGain *float64 `json:"measured_serial_gain,omitempty"`
	MeasuredPipeGain   *float64 `json:"measured_pipelined_gain,omitempty"`
}

type analysis struct {
	// GoVerifyFraction f: the share of node time Go verification took in serial mode.
	GoVerifyFraction float64 `json:"go_verify_fraction"`
	// AmdahlLimitGain 1 / (1 − f) − 1: the gain if verification cost nothing.
	AmdahlLimitGain float64 `json:"amdahl_limit_gain"`
	// GoPipelinedGain: Go verification overlapped with execution, no offload.
	GoPipelinedGain *float64  `json:"go_pipelined_gain,omitempty"`
	Offloads        []offload `json:"offloads"`
	PaperFraction   float64   `json:"paper_fraction"`
	PaperGain       float64   `json:"paper_gain"`
	// PaperImpliedSpeedup: the verification speedup s for which Amdahl's law gives the paper's
	// gain at the paper's fraction.
	PaperImpliedSpeedup float64 `json:"paper_implied_speedup"`
}

type report struct {
	Config     config    `json:"config"`
	Runs       []*Run    `json:"runs"`
	Skipped    []skip    `json:"skipped"`
	Mismatches int       `json:"mismatches"`
	Amdahl     *analysis `json:"amdahl,omitempty"`
	Note       string    `json:"note,omitempty"`
}

func (r *report) find(backend, mode string) *Run {
	for _, run := range r.Runs {
		if run.Backend == backend && run.Mode == mode {
			return run
		}
	}
	return nil
}

func gain(run, base *Run) *float64 {
	if run == nil {
		return nil
	}
	g := run.TPS/base.TPS - 1
	return &g
}

func (r *report) analyse() {
	for _, run := range r.Runs {
		r.Mismatches += run.Mismatches
	}
	base := r.find("go", "serial")
	if base == nil {
		r.Note = "the Amdahl analysis needs the go backend in serial mode (--backend including go, --mode serial or both)"
		return
	}
	f := base.VerifyFraction
	a := &analysis{
		GoVerifyFraction: f,
		AmdahlLimitGain:  1/(1-f) - 1,
		GoPipelinedGain:  gain(r.find("go", "pipelined"), base),
		PaperFraction:    paperFraction,
		PaperGain:        paperGain,
		// 1 / (1 + g) = (1 − f) + f / s  ⇒  s = f / (1 / (1 + g) − (1 − f))
		PaperImpliedSpeedup: paperFraction / (1/(1+paperGain) - (1 - paperFraction)),
	}
	v, e := base.VerifyWaitSeconds, base.ExecSeconds
	for _, b := range []string{"chainsig-cpu", "chainsig-cuda"} {
		serial, pipe := r.find(b, "serial"), r.find(b, "pipelined")
		if serial == nil {
			continue
		}
		s := v / serial.VerifyWaitSeconds
		a.Offloads = append(a.Offloads, offload{
			Backend:            b,
			VerifySpeedup:      s,
			AmdahlGain:         1/((1-f)+f/s) - 1,
			OverlapGain:        (v+e)/math.Max(e, v/s) - 1,
			MeasuredSerialGain: gain(serial, base),
			MeasuredPipeGain:   gain(pipe, base),
		})
	}
	r.Amdahl = a
}

func pct(g *float64) string {
	if g == nil {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", *g*100)
}

func (r *report) print(w io.Writer) {
	c := r.Config
	auto := ""
	if c.ExecAuto {
		auto = ", auto: Go verification 30% of node time"
	}
	fmt.Fprintf(w, "\nnode pipeline: %s, %d transactions (%.1f%% corrupted), blocks of %d, execution %.1f µs a transaction (%s%s)\n",
		c.Alg, c.Txs, c.Bad*100, c.Block, c.ExecUs, c.Exec, auto)
	fmt.Fprintf(w, "%d CPUs, Go verification on %d goroutines, pipelined depth %d, %s\n\n", c.CPUs, c.Threads, c.Depth, c.GoVersion)
	fmt.Fprintf(w, "| backend | mode | TPS | block p50 ms | block p99 ms | verify s | exec s | verify share | invalid | mismatches |\n")
	fmt.Fprintf(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "| %s | %s | %.0f | %.1f | %.1f | %.2f | %.2f | %.0f%% | %d | %d |\n",
			run.Backend, run.Mode, run.TPS, run.LatencyP50Ms, run.LatencyP99Ms,
			run.VerifyWaitSeconds, run.ExecSeconds, run.VerifyFraction*100, run.Invalid, run.Mismatches)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "| %s | skipped: %.80s | | | | | | | | |\n", s.Backend, s.Reason)
	}
	fmt.Fprintf(w, "\n(verify s: time the block loop spent verifying or waiting for verdicts; pipelined, only the part not hidden behind execution)\n")
	fmt.Fprintf(w, "verdicts checked against the mempool: %d mismatches\n", r.Mismatches)
	a := r.Amdahl
	if a == nil {
		fmt.Fprintf(w, "\nAmdahl: %s\n", r.Note)
		return
	}
	fmt.Fprintf(w, "\nAmdahl, from the measured figures (the paper: verification %.0f%% of node time, %+.2f%% TPS offloaded, which Amdahl's law gives for a verification speedup of %.2f×)\n",
		a.PaperFraction*100, a.PaperGain*100, a.PaperImpliedSpeedup)
	fmt.Fprintf(w, "  Go verification share of node time, serial: f = %.1f%%; limit if verification were free: %+.1f%%\n",
		a.GoVerifyFraction*100, a.AmdahlLimitGain*100)
	fmt.Fprintf(w, "  Go verification pipelined behind execution, no offload: %s measured\n", pct(a.GoPipelinedGain))
	for _, o := range a.Offloads {
		fmt.Fprintf(w, "  %s: verification %.2f× Go's; predicted %+.1f%% (Amdahl, in series), %+.1f%% (overlapped); measured %s serial, %s pipelined\n",
			o.Backend, o.VerifySpeedup, o.AmdahlGain*100, o.OverlapGain*100, pct(o.MeasuredSerialGain), pct(o.MeasuredPipeGain))
	}
}

func (r *report) writeJSON(path string) error {
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}
