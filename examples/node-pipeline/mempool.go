package main

// The mempool: generated signed transactions, a known fraction of them corrupted after signing,
// each with the verdict a correct verifier must give. Signing is not timed; it runs on every
// core before the pipeline starts.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/rand"
	"runtime"
	"sync"

	"github.com/btcsuite/btcd/btcec"
	"github.com/tjfoc/gmsm/sm2"
	"golang.org/x/crypto/sha3"
)

// Tx is one transaction as the node receives it. Which fields are set depends on the algorithm:
//   - sm2: Signer (an index into the mempool's keys), Payload, ID, Sig (r ‖ s); the verifier
//     hashes SM3(Z_A ‖ Payload) itself, Z_A from the signer id and key (GB/T 32918.2);
//   - p256: Signer, Payload, Sig; the verifier hashes SHA-256(Payload);
//   - secp256k1: Digest (Keccak-256 of Payload), Sig (r ‖ s), V (the y parity) and From, the
//     address that signed it; the verifier recovers the sender and compares, as an Ethereum
//     node does (go-ethereum's rules: v 0 or 1, s at most n/2).
type Tx struct {
	Signer  int
	Payload []byte
	ID      []byte
	Digest  [32]byte
	Sig     [64]byte
	V       byte
	From    [20]byte
	// Want is the verdict a correct verifier gives: false exactly for corrupted transactions.
	Want bool
}

// Mempool holds the transactions of one algorithm and the public keys of their signers.
type Mempool struct {
	Alg string
	Txs []Tx
	// SM2Keys and P256Keys are the signers' public keys (the node's known accounts); secp256k1
	// transactions carry no key, it is recovered.
	SM2Keys  []*sm2.PublicKey
	P256Keys []*ecdsa.PublicKey
	Corrupt  int
}

// generate signs n transactions with `signers` keys in turn and corrupts exactly
// round(n·badFraction) of them, chosen at random: a flipped bit in the payload (a forged
// transaction) or in s (a broken signature), or for SM2 a wrong signer id. Each corruption makes
// the signature invalid (short of breaking the hash or the curve).
func generate(alg string, n, signers int, badFraction float64, seed int64) (*Mempool, error) {
	mp := &Mempool{Alg: alg, Txs: make([]Tx, n)}
	corrupt := make([]bool, n)
	for _, i := range rand.New(rand.NewSource(seed)).Perm(n)[:int(float64(n)*badFraction+0.5)] {
		corrupt[i] = true
		mp.Corrupt++
	}
	var sign func(i int, tx *Tx, corrupt bool, rng *rand.Rand) error
	switch alg {
	case "sm2":
		keys := make([]*sm2.PrivateKey, 0, signers)
		for len(keys) < signers {
			k, err := sm2.GenerateKey()
			if err != nil {
				return nil, err
			}
			// gmsm's Z_A writes y without its leading zero bytes (GB/T 32918.2 fixes it at 32
			// bytes), so for such keys it signs under a non-standard Z_A; they are left out.
			if len(k.Y.Bytes()) < 32 {
				continue
			}
			keys = append(keys, k)
			mp.SM2Keys = append(mp.SM2Keys, &k.PublicKey)
		}
		sign = func(i int, tx *Tx, corrupt bool, rng *rand.Rand) error {
			return signSM2(keys, i, tx, corrupt, rng)
		}
	case "p256":
		keys := make([]*ecdsa.PrivateKey, signers)
		for k := range keys {
			key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
			if err != nil {
				return nil, err
			}
			keys[k] = key
			mp.P256Keys = append(mp.P256Keys, &key.PublicKey)
		}
		sign = func(i int, tx *Tx, corrupt bool, rng *rand.Rand) error {
			return signP256(keys, i, tx, corrupt, rng)
		}
	case "secp256k1":
		keys := make([]*btcec.PrivateKey, signers)
		for k := range keys {
			key, err := btcec.NewPrivateKey(btcec.S256())
			if err != nil {
				return nil, err
			}
			keys[k] = key
		}
		sign = func(i int, tx *Tx, corrupt bool, rng *rand.Rand) error {
			return signSecp256k1(keys, i, tx, corrupt, rng)
		}
	default:
		return nil, fmt.Errorf("--alg %q: expected sm2, secp256k1 or p256", alg)
	}

	workers := runtime.NumCPU()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + 1 + int64(w)))
			for i := w; i < n && errs[w] == nil; i += workers {
				mp.Txs[i].Want = !corrupt[i]
				errs[w] = sign(i, &mp.Txs[i], corrupt[i], rng)
			}
		}(w)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return mp, nil
}

// payload is a transaction body: nonce, recipient, value and some call data.
func payload(i int, rng *rand.Rand) []byte {
	p := make([]byte, 8+20+16+rng.Intn(96))
	binary.BigEndian.PutUint64(p, uint64(i))
	rng.Read(p[8:])
	return p
}

func flipBit(b []byte, rng *rand.Rand) {
	k := rng.Intn(len(b) * 8)
	b[k/8] ^= 1 << (k % 8)
}

func putRS(dst *[64]byte, r, s *big.Int) {
	r.FillBytes(dst[:32])
	s.FillBytes(dst[32:])
}

func signSM2(keys []*sm2.PrivateKey, i int, tx *Tx, corrupt bool, rng *rand.Rand) error {
	tx.Signer = i % len(keys)
	tx.Payload = payload(i, rng)
	tx.ID = make([]byte, 8+rng.Intn(24)) // the account's signer id
	rng.Read(tx.ID)
	r, s, err := sm2.Sm2Sign(keys[tx.Signer], tx.Payload, tx.ID)
	if err != nil {
		return err
	}
	putRS(&tx.Sig, r, s)
	if corrupt {
		switch rng.Intn(3) {
		case 0:
			flipBit(tx.Payload, rng)
		case 1:
			flipBit(tx.Sig[32:], rng)
		default:
			tx.ID = append(tx.ID, '!')
		}
	}
	return nil
}

func signP256(keys []*ecdsa.PrivateKey, i int, tx *Tx, corrupt bool, rng *rand.Rand) error {
	tx.Signer = i % len(keys)
	tx.Payload = payload(i, rng)
	h := sha256.Sum256(tx.Payload)
	r, s, err := ecdsa.Sign(crand.Reader, keys[tx.Signer], h[:])
	if err != nil {
		return err
	}
	putRS(&tx.Sig, r, s)
	if corrupt {
		if rng.Intn(2) == 0 {
			flipBit(tx.Payload, rng)
		} else {
			flipBit(tx.Sig[32:], rng)
		}
	}
	return nil
}

func keccak256(data ...[]byte) (out [32]byte) {
	h := sha3.NewLegacyKeccak256()
	for _, d := range data {
		h.Write(d)
	}
	h.Sum(out[:0])
	return out
}

// address is Ethereum's: the last 20 bytes of Keccak-256 of the uncompressed key without 0x04.
func address(uncompressed []byte) (a [20]byte) {
	h := keccak256(uncompressed[1:])
	copy(a[:], h[12:])
	return a
}

// signSecp256k1 signs an Ethereum-style record: the digest is Keccak-256 of the payload (a
// fixed layout, not an RLP transaction: the binding's RecoverBatch takes digest ‖ r ‖ s ‖ v),
// signed by btcec with RFC 6979 nonces and low s, v the y parity.
func signSecp256k1(keys []*btcec.PrivateKey, i int, tx *Tx, corrupt bool, rng *rand.Rand) error {
	tx.Signer = i % len(keys)
	key := keys[tx.Signer]
	tx.Payload = payload(i, rng)
	tx.Digest = keccak256(tx.Payload)
	compact, err := btcec.SignCompact(btcec.S256(), key, tx.Digest[:], false)
	if err != nil {
		return err
	}
	tx.V = compact[0] - 27
	copy(tx.Sig[:], compact[1:])
	tx.From = address(key.PubKey().SerializeUncompressed())
	if corrupt {
		// r is left alone, so it stays the x of a curve point (see verifiers.go).
		if rng.Intn(2) == 0 {
			flipBit(tx.Payload, rng)
			tx.Digest = keccak256(tx.Payload)
		} else {
			flipBit(tx.Sig[32:], rng)
		}
	}
	return nil
}
