package main

import "testing"

// allValid says every transaction is valid: a verifier that checks nothing.
type allValid struct{}

func (allValid) Start(lo, hi int) (Pending, error) {
	d := &done{ch: make(chan struct{}), verdicts: make([]bool, hi-lo)}
	for i := range d.verdicts {
		d.verdicts[i] = true
	}
	close(d.ch)
	return d, nil
}

func (allValid) Close() {}

// The mempool's corrupted transactions are exactly the ones Go's verifiers refuse, and a
// verifier that accepts everything is caught on each of them, in both modes.
func TestCorruptionIsCaught(t *testing.T) {
	for _, alg := range []string{"sm2", "secp256k1", "p256"} {
		mp, err := generate(alg, 45, 4, 0.2, 7)
		if err != nil {
			t.Fatal(err)
		}
		if mp.Corrupt != 9 {
			t.Fatalf("%s: %d corrupted, expected 9", alg, mp.Corrupt)
		}
		for _, depth := range []int{0, 2} {
			run, err := runPipeline(mp, newGoVerifier(mp, 3), "go", 10, depth, Execution{})
			if err != nil {
				t.Fatal(err)
			}
			if run.Mismatches != 0 || run.Invalid != 9 || run.Blocks != 5 {
				t.Fatalf("%s depth %d, Go verifiers: %+v", alg, depth, run)
			}
			run, err = runPipeline(mp, allValid{}, "fake", 10, depth, Execution{})
			if err != nil {
				t.Fatal(err)
			}
			if run.Mismatches != 9 || run.Valid != 45 {
				t.Fatalf("%s depth %d, accept-all verifier: %+v", alg, depth, run)
			}
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{0.5, 5}, {0.99, 10}, {0.1, 1}, {0.11, 2}} {
		if got := percentile(v, c.p); got != c.want {
			t.Errorf("p%.0f = %v, expected %v", c.p*100, got, c.want)
		}
	}
}
