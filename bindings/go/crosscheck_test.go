package chainsig

// Verdict-by-verdict cross-checks against independent Go implementations: github.com/tjfoc/gmsm
// (SM2, random identifiers), crypto/ecdsa (P-256) and github.com/btcsuite/btcd/btcec
// (secp256k1 verification, and sender recovery under go-ethereum's rules). Each check signs
// records with the library, corrupts about a third in varied ways, verifies every record with
// that library's own verifier and through this package, and requires the same verdicts.
// The counts do not depend on -short: this is the acceptance test of the binding.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/sha256"
	"math/big"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/btcec"
	"github.com/tjfoc/gmsm/sm2"
	"golang.org/x/crypto/sha3"
)

// perAlgorithm is how many signatures each cross-check makes: 10^5, or CHAINSIG_GO_CROSSCHECK_N
// for a quicker local run.
var perAlgorithm = func() int {
	if n, err := strconv.Atoi(os.Getenv("CHAINSIG_GO_CROSSCHECK_N")); err == nil && n >= 1000 {
		return n
	}
	return 100000
}()

// keysPerAlgorithm keys sign the records in turn (key generation is not what is tested).
const keysPerAlgorithm = 512

func backend() string {
	if b := os.Getenv("CHAINSIG_BACKEND"); b != "" {
		return b
	}
	return "auto"
}

func openT(t *testing.T) *Context {
	t.Helper()
	ctx, err := Open(backend())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// parallel runs f(i) for i in [0, n) on every core; each worker gets its own random source.
func parallel(n int, seed int64, f func(i int, rng *rand.Rand)) {
	workers := runtime.NumCPU()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed + int64(w)))
			for i := w; i < n; i += workers {
				f(i, rng)
			}
		}(w)
	}
	wg.Wait()
}

func pad32(v *big.Int) []byte {
	out := make([]byte, 32)
	v.FillBytes(out)
	return out
}

func flipBit(b []byte, rng *rand.Rand) {
	if len(b) == 0 {
		return
	}
	k := rng.Intn(len(b) * 8)
	b[k/8] ^= 1 << (k % 8)
}

func sec1(x, y *big.Int, compressed bool) []byte {
	if compressed {
		return append([]byte{byte(2 + y.Bit(0))}, pad32(x)...)
	}
	return append(append([]byte{4}, pad32(x)...), pad32(y)...)
}

// corruption picks how record i is spoiled: 0 none (70%), else 1..6.
func corruption(rng *rand.Rand) int {
	if rng.Intn(10) < 7 {
		return 0
	}
	return 1 + rng.Intn(6)
}

// verifyAll verifies records through the package in batches, alternating VerifyBatch and
// Submit with several tickets in flight, and returns verdicts and per-record errors.
func verifyAll(t *testing.T, ctx *Context, records []Record) ([]bool, []error) {
	t.Helper()
	const batch = 8192
	verdicts := make([]bool, len(records))
	errs := make([]error, len(records))
	var tickets []*Ticket
	var starts []int
	for from := 0; from < len(records); from += batch {
		to := from + batch
		if to > len(records) {
			to = len(records)
		}
		if (from/batch)%2 == 0 {
			bm, e, err := ctx.VerifyBatch(records[from:to])
			if err != nil {
				t.Fatal(err)
			}
			for i := from; i < to; i++ {
				verdicts[i], errs[i] = bm.Valid(i-from), e[i-from]
			}
		} else {
			tk, err := ctx.Submit(records[from:to])
			if err != nil {
				t.Fatal(err)
			}
			tickets, starts = append(tickets, tk), append(starts, from)
		}
	}
	for k, tk := range tickets {
		bm, e, err := tk.Wait()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < bm.Len; i++ {
			verdicts[starts[k]+i], errs[starts[k]+i] = bm.Valid(i), e[i]
		}
	}
	return verdicts, errs
}

func compare(t *testing.T, name string, records []Record, want []bool, got []bool, errs []error) {
	t.Helper()
	valid, bad := 0, 0
	for i := range records {
		if errs[i] != nil {
			t.Errorf("%s record %d: unexpected error %v", name, i, errs[i])
		}
		if want[i] {
			valid++
		}
		if got[i] != want[i] {
			bad++
			if bad <= 5 {
				t.Errorf("%s record %d: chainsig says %v, the reference %v: %+v", name, i, got[i], want[i], records[i])
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d verdicts differ", name, bad, len(records))
	}
	if valid < len(records)/2 || valid == len(records) {
		t.Fatalf("%s: %d of %d valid: the corruption mix is off", name, valid, len(records))
	}
	t.Logf("%s: %d signatures, %d valid, every verdict equal to the reference", name, len(records), valid)
}

func TestSM2AgainstGmsm(t *testing.T) {
	ctx := openT(t)
	keys := make([]*sm2.PrivateKey, 0, keysPerAlgorithm)
	for len(keys) < keysPerAlgorithm {
		k, err := sm2.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		// gmsm's Z_A writes y without its leading zero bytes (GB/T 32918.2 fixes it at 32), so
		// for such keys it signs and verifies under a non-standard Z_A; they are left out.
		if len(k.Y.Bytes()) < 32 {
			continue
		}
		keys = append(keys, k)
	}
	n := sm2.P256Sm2().Params().N
	records := make([]Record, perAlgorithm)
	want := make([]bool, perAlgorithm)
	parallel(perAlgorithm, 1, func(i int, rng *rand.Rand) {
		key := keys[i%len(keys)]
		msg := make([]byte, rng.Intn(100))
		rng.Read(msg)
		var id []byte // nil: the default identifier
		if rng.Intn(4) != 0 {
			id = make([]byte, rng.Intn(40))
			rng.Read(id)
		}
		uid := id
		if uid == nil {
			uid = []byte("1234567812345678")
		}
		r, s, err := sm2.Sm2Sign(key, msg, uid)
		if err != nil {
			panic(err)
		}
		pub := &key.PublicKey
		switch corruption(rng) {
		case 1:
			r = new(big.Int).Xor(r, big.NewInt(1<<uint(rng.Intn(62))))
		case 2:
			s = new(big.Int).Xor(s, big.NewInt(1<<uint(rng.Intn(62))))
		case 3:
			msg = append(msg, byte(rng.Intn(256)))
		case 4:
			pub = &keys[(i+1+rng.Intn(len(keys)-1))%len(keys)].PublicKey
		case 5:
			if id == nil {
				id = []byte{}
			} else {
				id = append(id, 1)
			}
		case 6:
			s = new(big.Int).Add(s, n) // out of range
			if s.BitLen() > 256 {
				s = new(big.Int).Set(n)
			}
		}
		uid = id
		if uid == nil {
			uid = []byte("1234567812345678")
		}
		want[i] = sm2.Sm2Verify(pub, msg, uid, r, s)
		records[i] = Record{Alg: SM2, PubKey: sec1(pub.X, pub.Y, i%2 == 1),
			Sig: append(pad32(r), pad32(s)...), Message: msg, ID: id}
	})
	got, errs := verifyAll(t, ctx, records)
	compare(t, "sm2", records, want, got, errs)
}

func TestP256AgainstCryptoEcdsa(t *testing.T) {
	ctx := openT(t)
	curve := elliptic.P256()
	n := curve.Params().N
	half := new(big.Int).Rsh(n, 1)
	keys := make([]*ecdsa.PrivateKey, keysPerAlgorithm)
	for i := range keys {
		k, err := ecdsa.GenerateKey(curve, crand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	records := make([]Record, perAlgorithm)
	want := make([]bool, perAlgorithm)
	parallel(perAlgorithm, 2, func(i int, rng *rand.Rand) {
		key := keys[i%len(keys)]
		msg := make([]byte, rng.Intn(100))
		rng.Read(msg)
		digest := sha256.Sum256(msg)
		r, s, err := ecdsa.Sign(crand.Reader, key, digest[:])
		if err != nil {
			panic(err)
		}
		pub := &key.PublicKey
		lowS := rng.Intn(3) == 0
		switch corruption(rng) {
		case 1:
			r = new(big.Int).Xor(r, big.NewInt(1<<uint(rng.Intn(62))))
		case 2:
			s = new(big.Int).Xor(s, big.NewInt(1<<uint(rng.Intn(62))))
		case 3:
			flipBit(digest[:], rng)
			msg = nil // a digest record
		case 4:
			pub = &keys[(i+1+rng.Intn(len(keys)-1))%len(keys)].PublicKey
		case 5:
			s = new(big.Int).Sub(n, s) // the other s: valid unless the low-s rule applies
		case 6:
			r = new(big.Int)
		}
		want[i] = ecdsa.Verify(pub, digest[:], r, s) && (!lowS || s.Cmp(half) <= 0)
		rec := Record{Alg: P256, PubKey: sec1(pub.X, pub.Y, i%2 == 1), Sig: append(pad32(r), pad32(s)...), LowS: lowS}
		if msg != nil && rng.Intn(2) == 0 {
			rec.Message = msg
		} else {
			rec.Digest = digest[:]
		}
		records[i] = rec
	})
	got, errs := verifyAll(t, ctx, records)
	compare(t, "p256", records, want, got, errs)
}

func keccak(data []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write(data)
	return h.Sum(nil)
}

func btcecKeys(t *testing.T) []*btcec.PrivateKey {
	keys := make([]*btcec.PrivateKey, keysPerAlgorithm)
	for i := range keys {
		k, err := btcec.NewPrivateKey(btcec.S256())
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	return keys
}

func TestSecp256k1AgainstBtcec(t *testing.T) {
	ctx := openT(t)
	keys := btcecKeys(t)
	n := btcec.S256().N
	half := new(big.Int).Rsh(n, 1)
	records := make([]Record, perAlgorithm)
	want := make([]bool, perAlgorithm)
	parallel(perAlgorithm, 3, func(i int, rng *rand.Rand) {
		key := keys[i%len(keys)]
		msg := make([]byte, rng.Intn(100))
		rng.Read(msg)
		digest := keccak(msg)
		sig, err := key.Sign(digest)
		if err != nil {
			panic(err)
		}
		r, s := sig.R, sig.S
		pub := key.PubKey()
		lowS := rng.Intn(2) == 0
		switch corruption(rng) {
		case 1:
			r = new(big.Int).Xor(r, big.NewInt(1<<uint(rng.Intn(62))))
		case 2:
			s = new(big.Int).Xor(s, big.NewInt(1<<uint(rng.Intn(62))))
		case 3:
			flipBit(digest, rng)
			msg = nil
		case 4:
			pub = keys[(i+1+rng.Intn(len(keys)-1))%len(keys)].PubKey()
		case 5:
			s = new(big.Int).Sub(n, s)
		case 6:
			s = new(big.Int)
		}
		ok := r.Sign() > 0 && s.Sign() > 0 && r.Cmp(n) < 0 && s.Cmp(n) < 0 &&
			(&btcec.Signature{R: r, S: s}).Verify(digest, pub)
		want[i] = ok && (!lowS || s.Cmp(half) <= 0)
		rec := Record{Alg: Secp256k1, PubKey: sec1(pub.X, pub.Y, i%2 == 1), Sig: append(pad32(r), pad32(s)...), LowS: lowS}
		if msg != nil && rng.Intn(2) == 0 {
			rec.Message = msg
		} else {
			rec.Digest = digest
		}
		records[i] = rec
	})
	got, errs := verifyAll(t, ctx, records)
	compare(t, "secp256k1", records, want, got, errs)
}

// isXCoordinate reports whether some point of secp256k1 has x = r. Recovery starts from that
// point (SEC 1 §4.1.6, step 1.2); libsecp256k1, which go-ethereum recovers with, fails without
// one, but the packaged btcec's decompressPoint does not check that its square root is one, so
// its RecoverCompact returns a key computed from a point off the curve. The reference applies
// the check itself.
func isXCoordinate(r *big.Int) bool {
	p := btcec.S256().P
	rhs := new(big.Int).Exp(r, big.NewInt(3), p)
	rhs.Add(rhs, btcec.S256().B).Mod(rhs, p)
	return new(big.Int).ModSqrt(rhs, p) != nil
}

// TestRecoveryAgainstBtcec recovers senders as go-ethereum does for transactions: v in {0, 1},
// 0 < r < n, 0 < s <= n/2 (EIP-2), r the x of a point, then the key from btcec's RecoverCompact.
func TestRecoveryAgainstBtcec(t *testing.T) {
	ctx := openT(t)
	keys := btcecKeys(t)
	n := btcec.S256().N
	half := new(big.Int).Rsh(n, 1)
	reqs := make([]RecoverRequest, perAlgorithm)
	want := make([][]byte, perAlgorithm) // the uncompressed key, nil when none
	wantErr := make([]bool, perAlgorithm)
	parallel(perAlgorithm, 4, func(i int, rng *rand.Rand) {
		key := keys[i%len(keys)]
		var digest [32]byte
		rng.Read(digest[:])
		compact, err := btcec.SignCompact(btcec.S256(), key, digest[:], false)
		if err != nil {
			panic(err)
		}
		v := compact[0] - 27
		r := new(big.Int).SetBytes(compact[1:33])
		s := new(big.Int).SetBytes(compact[33:65])
		switch corruption(rng) {
		case 1:
			r = new(big.Int).Xor(r, big.NewInt(1<<uint(rng.Intn(62))))
		case 2:
			s = new(big.Int).Xor(s, big.NewInt(1<<uint(rng.Intn(62))))
		case 3:
			flipBit(digest[:], rng)
		case 4:
			v ^= 1
		case 5:
			s, v = new(big.Int).Sub(n, s), v^1 // the same point, refused for its high s
		case 6:
			v += 2 + byte(rng.Intn(30))
		}
		var req RecoverRequest
		req.Digest, req.V = digest, v
		copy(req.Sig[:32], pad32(r))
		copy(req.Sig[32:], pad32(s))
		reqs[i] = req
		wantErr[i] = v > 1
		if v > 1 || r.Sign() == 0 || s.Sign() == 0 || r.Cmp(n) >= 0 || s.Cmp(half) > 0 {
			return
		}
		if !isXCoordinate(r) {
			return // see isXCoordinate
		}
		sig := append([]byte{27 + v}, req.Sig[:]...)
		if pub, _, err := btcec.RecoverCompact(btcec.S256(), sig, digest[:]); err == nil {
			want[i] = pub.SerializeUncompressed()
		}
	})
	found := 0
	for from := 0; from < perAlgorithm; from += 8192 {
		to := from + 8192
		if to > perAlgorithm {
			to = perAlgorithm
		}
		got, errs, err := ctx.RecoverBatch(reqs[from:to])
		if err != nil {
			t.Fatal(err)
		}
		for k, rec := range got {
			i := from + k
			if (errs[k] != nil) != wantErr[i] {
				t.Fatalf("item %d: error %v, expected one: %v", i, errs[k], wantErr[i])
			}
			if rec.Found != (want[i] != nil) {
				t.Fatalf("item %d: chainsig found %v, the reference %v (digest %x, r‖s %x, v %d)",
					i, rec.Found, want[i] != nil, reqs[i].Digest, reqs[i].Sig, reqs[i].V)
			}
			if !rec.Found {
				continue
			}
			found++
			if string(rec.PubKey[:]) != string(want[i]) {
				t.Fatalf("item %d: key %x, the reference %x", i, rec.PubKey, want[i])
			}
			if string(rec.Address[:]) != string(keccak(want[i][1:])[12:]) {
				t.Fatalf("item %d: address %x does not match its key", i, rec.Address)
			}
		}
	}
	if found < perAlgorithm/2 || found == perAlgorithm {
		t.Fatalf("%d of %d recovered: the corruption mix is off", found, perAlgorithm)
	}
	t.Logf("recovery: %d signatures, %d senders found, every one equal to the reference", perAlgorithm, found)
}
