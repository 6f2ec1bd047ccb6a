package main

// The verifiers a node can use: Go's own libraries on goroutines (tjfoc/gmsm for SM2,
// crypto/ecdsa for P-256, btcec for secp256k1 sender recovery), or chainsig in process through
// the Go binding on its CPU or CUDA backend. Each starts a block's verification and returns at
// once; Wait gives one verdict a transaction.

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"fmt"
	"math/big"
	"sync"

	chainsig "github.com/chainsig/chainsig/bindings/go"

	"github.com/btcsuite/btcd/btcec"
	"github.com/tjfoc/gmsm/sm2"
)

// Verifier verifies blocks of one mempool.
type Verifier interface {
	// Start begins verifying transactions [lo, hi) and returns without waiting.
	Start(lo, hi int) (Pending, error)
	Close()
}

// Pending is a block being verified.
type Pending interface {
	// Wait blocks until the block is verified: verdict i is transaction lo+i's.
	Wait() ([]bool, error)
}

// done is a Pending filled by a goroutine.
type done struct {
	ch       chan struct{}
	verdicts []bool
	err      error
}

func (d *done) Wait() ([]bool, error) {
	<-d.ch
	return d.verdicts, d.err
}

// goVerifier verifies with the Go libraries, a block split across `threads` goroutines.
type goVerifier struct {
	mp      *Mempool
	threads int
	half    *big.Int // secp256k1 n/2: EIP-2's bound on s
}

func newGoVerifier(mp *Mempool, threads int) *goVerifier {
	return &goVerifier{mp: mp, threads: threads, half: new(big.Int).Rsh(btcec.S256().N, 1)}
}

func (g *goVerifier) Close() {}

func (g *goVerifier) Start(lo, hi int) (Pending, error) {
	d := &done{ch: make(chan struct{}), verdicts: make([]bool, hi-lo)}
	go func() {
		var wg sync.WaitGroup
		for w := 0; w < g.threads; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := lo + w; i < hi; i += g.threads {
					d.verdicts[i-lo] = g.verify(&g.mp.Txs[i])
				}
			}(w)
		}
		wg.Wait()
		close(d.ch)
	}()
	return d, nil
}

func (g *goVerifier) verify(tx *Tx) bool {
	r := new(big.Int).SetBytes(tx.Sig[:32])
	s := new(big.Int).SetBytes(tx.Sig[32:])
	switch g.mp.Alg {
	case "sm2":
		return sm2.Sm2Verify(g.mp.SM2Keys[tx.Signer], tx.Payload, tx.ID, r, s)
	case "p256":
		h := sha256.Sum256(tx.Payload)
		return ecdsa.Verify(g.mp.P256Keys[tx.Signer], h[:], r, s)
	default:
		// go-ethereum's checks for a transaction signature (EIP-2: s at most n/2), then the
		// key. btcec's recovery does not check that r is the x of a curve point (libsecp256k1
		// does); the mempool never alters r, so that case cannot arise here.
		if tx.V > 1 || r.Sign() == 0 || s.Sign() == 0 || r.Cmp(btcec.S256().N) >= 0 || s.Cmp(g.half) > 0 {
			return false
		}
		var compact [65]byte
		compact[0] = 27 + tx.V
		copy(compact[1:], tx.Sig[:])
		pub, _, err := btcec.RecoverCompact(btcec.S256(), compact[:], tx.Digest[:])
		return err == nil && address(pub.SerializeUncompressed()) == tx.From
	}
}

// chainsigVerifier verifies through the Go binding. SM2 and P-256 blocks go through Submit and
// Ticket.Wait; sender recovery has no asynchronous call in the C ABI, so a goroutine runs
// RecoverBatch (one OS thread blocked in cgo, the library's threads doing the work).
type chainsigVerifier struct {
	mp   *Mempool
	ctx  *chainsig.Context
	keys [][]byte // the signers' uncompressed SEC1 keys
}

func newChainsigVerifier(mp *Mempool, backend string) (*chainsigVerifier, error) {
	ctx, err := chainsig.Open(backend)
	if err != nil {
		return nil, err
	}
	c := &chainsigVerifier{mp: mp, ctx: ctx}
	switch mp.Alg {
	case "sm2":
		for _, k := range mp.SM2Keys {
			c.keys = append(c.keys, uncompressed(k.X, k.Y))
		}
		// The chain's accounts are known: the GPU verifies their records through per-key tables.
		if err := ctx.LoadSigners(c.keys); err != nil {
			ctx.Close()
			return nil, err
		}
	case "p256":
		for _, k := range mp.P256Keys {
			c.keys = append(c.keys, uncompressed(k.X, k.Y))
		}
	}
	return c, nil
}

func uncompressed(x, y *big.Int) []byte {
	out := make([]byte, 65)
	out[0] = 4
	x.FillBytes(out[1:33])
	y.FillBytes(out[33:])
	return out
}

func (c *chainsigVerifier) Close() { c.ctx.Close() }

type ticket struct{ t *chainsig.Ticket }

func (t ticket) Wait() ([]bool, error) {
	bm, _, err := t.t.Wait()
	if err != nil {
		return nil, err
	}
	verdicts := make([]bool, bm.Len)
	if bm.AllValid() { // whole words at once, as the paper's confirmation does
		for i := range verdicts {
			verdicts[i] = true
		}
		return verdicts, nil
	}
	for i := range verdicts {
		verdicts[i] = bm.Valid(i)
	}
	return verdicts, nil
}

func (c *chainsigVerifier) Start(lo, hi int) (Pending, error) {
	txs := c.mp.Txs[lo:hi]
	if c.mp.Alg == "secp256k1" {
		reqs := make([]chainsig.RecoverRequest, len(txs))
		for i := range txs {
			reqs[i] = chainsig.RecoverRequest{Digest: txs[i].Digest, Sig: txs[i].Sig, V: txs[i].V}
		}
		d := &done{ch: make(chan struct{})}
		go func() {
			defer close(d.ch)
			found, _, err := c.ctx.RecoverBatch(reqs)
			if err != nil {
				d.err = err
				return
			}
			d.verdicts = make([]bool, len(found))
			for i, f := range found {
				d.verdicts[i] = f.Found && f.Address == txs[i].From
			}
		}()
		return d, nil
	}
	alg := chainsig.SM2
	if c.mp.Alg == "p256" {
		alg = chainsig.P256
	}
	records := make([]chainsig.Record, len(txs))
	for i := range txs {
		tx := &txs[i]
		// Message records: the library hashes (SM3 with Z_A, or SHA-256) as Go's verifiers do.
		records[i] = chainsig.Record{Alg: alg, PubKey: c.keys[tx.Signer], Sig: tx.Sig[:], Message: tx.Payload, ID: tx.ID}
	}
	t, err := c.ctx.Submit(records)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	return ticket{t}, nil
}
