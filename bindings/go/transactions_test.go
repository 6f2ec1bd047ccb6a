package chainsig

// RecoverTransactions against transactions built and signed here, independently of the
// library: a small RLP encoder (the encoding is what the library's decoder must read, so it is
// written out, not borrowed from the library), Keccak-256 from golang.org/x/crypto/sha3 and
// btcec's signatures. Legacy (with and without EIP-155), EIP-2930 and EIP-1559 transactions
// with random fields, a third broken in ways whose cause is known (high s, bad v, cut short,
// trailing bytes, r zero); every sender must be the signing key's, every refusal its cause. On a
// backend other than "cpu" (CHAINSIG_BACKEND=cuda on a GPU) the answers must also be the CPU's.

import (
	"encoding/hex"
	"math/big"
	"math/rand"
	"testing"

	"github.com/btcsuite/btcd/btcec"
)

// rlpHeader is the prefix of a string (base 0x80) or list (base 0xc0) of n bytes.
func rlpHeader(base byte, n int) []byte {
	if n < 56 {
		return []byte{base + byte(n)}
	}
	l := new(big.Int).SetInt64(int64(n)).Bytes()
	return append([]byte{base + 55 + byte(len(l))}, l...)
}

func rlpBytes(b []byte) []byte {
	if len(b) == 1 && b[0] < 0x80 {
		return []byte{b[0]}
	}
	return append(rlpHeader(0x80, len(b)), b...)
}

// rlpUint is an integer: big-endian without leading zeros (zero is the empty string).
func rlpUint(v uint64) []byte {
	return rlpBytes(new(big.Int).SetUint64(v).Bytes())
}

func rlpBig(v *big.Int) []byte {
	return rlpBytes(v.Bytes())
}

func rlpList(items ...[]byte) []byte {
	var body []byte
	for _, item := range items {
		body = append(body, item...)
	}
	return append(rlpHeader(0xc0, len(body)), body...)
}

// A transaction's kinds here.
const (
	legacyPlain = iota // v = 27 + parity
	legacy155          // v = 35 + 2 chain id + parity
	eip2930
	eip1559
)

// txCase is one transaction and what it must give.
type txCase struct {
	raw  []byte
	key  *btcec.PrivateKey // the signer; nil when a refusal is expected
	code int               // the expected CS_REC_TX_* cause when key is nil
}

// randomTx builds and signs a transaction of a random kind, broken in one of the known ways
// about a third of the time.
func randomTx(rng *rand.Rand, key *btcec.PrivateKey) txCase {
	kind := rng.Intn(4)
	chainID := uint64(1 + rng.Intn(100000))
	to := make([]byte, 20)
	rng.Read(to)
	data := make([]byte, rng.Intn(120))
	rng.Read(data)
	value := new(big.Int).Rand(rng, new(big.Int).Lsh(big.NewInt(1), uint(rng.Intn(200))))
	nonce, gas := uint64(rng.Intn(1<<20)), uint64(21000+rng.Intn(1<<20))
	var accessList []byte
	entries := make([][]byte, rng.Intn(3))
	for k := range entries {
		address := make([]byte, 20)
		rng.Read(address)
		keys := make([][]byte, rng.Intn(3))
		for j := range keys {
			slot := make([]byte, 32)
			rng.Read(slot)
			keys[j] = rlpBytes(slot)
		}
		entries[k] = rlpList(rlpBytes(address), rlpList(keys...))
	}
	accessList = rlpList(entries...)

	var fields [][]byte
	var typeByte []byte
	switch kind {
	case legacyPlain, legacy155:
		fields = [][]byte{rlpUint(nonce), rlpUint(uint64(rng.Intn(1 << 40))), rlpUint(gas), rlpBytes(to), rlpBig(value), rlpBytes(data)}
	case eip2930:
		typeByte = []byte{0x01}
		fields = [][]byte{rlpUint(chainID), rlpUint(nonce), rlpUint(uint64(rng.Intn(1 << 40))), rlpUint(gas), rlpBytes(to), rlpBig(value), rlpBytes(data), accessList}
	case eip1559:
		typeByte = []byte{0x02}
		fields = [][]byte{rlpUint(chainID), rlpUint(nonce), rlpUint(uint64(rng.Intn(1 << 30))), rlpUint(uint64(rng.Intn(1 << 40))), rlpUint(gas), rlpBytes(to), rlpBig(value), rlpBytes(data), accessList}
	}
	// The signing payload: EIP-155 appends (chain id, 0, 0) to a legacy list; typed ones are
	// the type byte and the list of their fields (EIP-2718).
	payload := fields
	if kind == legacy155 {
		payload = append(append([][]byte{}, fields...), rlpUint(chainID), rlpUint(0), rlpUint(0))
	}
	hash := keccak(append(append([]byte{}, typeByte...), rlpList(payload...)...))
	compact, err := btcec.SignCompact(btcec.S256(), key, hash, false)
	if err != nil {
		panic(err)
	}
	parity := uint64(compact[0] - 27)
	r := new(big.Int).SetBytes(compact[1:33])
	s := new(big.Int).SetBytes(compact[33:65])
	c := txCase{key: key}
	corrupt := rng.Intn(15)
	switch corrupt {
	case 0: // the other s of the same signature, refused since Homestead (EIP-2)
		s = new(big.Int).Sub(btcec.S256().N, s)
		parity ^= 1
		c = txCase{code: CodeTxHighS}
	case 1: // a v no rule allows
		parity = 2
		c = txCase{code: CodeTxBadV}
	case 2:
		r = new(big.Int)
		c = txCase{code: CodeTxBadRS}
	}
	v := parity
	switch kind {
	case legacyPlain:
		v += 27
	case legacy155:
		v += 35 + 2*chainID
	}
	if corrupt == 1 && kind <= legacy155 {
		// 29 to 34: neither 27, 28 nor an EIP-155 value (35 + 2 chain id + parity).
		v = 29 + uint64(rng.Intn(6))
	}
	signed := append(fields, rlpUint(v), rlpBig(r), rlpBig(s))
	c.raw = append(append([]byte{}, typeByte...), rlpList(signed...)...)
	switch corrupt {
	case 3:
		c = txCase{raw: c.raw[:len(c.raw)-1], code: CodeTxMalformedRLP}
	case 4:
		c = txCase{raw: append(c.raw, 0x80), code: CodeTxTrailingBytes}
	}
	return c
}

// The EIP-155 example transaction (nonce 9, 20 gwei, to 0x3535…35, 1 ether, chain 1), signed
// by the key 0x4646…46.
const eip155Example = "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"

func TestRecoverTransactionsKnownAnswer(t *testing.T) {
	ctx := openT(t)
	raw, _ := hex.DecodeString(eip155Example)
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = 0x46
	}
	_, pub := btcec.PrivKeyFromBytes(btcec.S256(), secret)
	got, errs, err := ctx.RecoverTransactions([][]byte{raw, {}, raw[:10], raw})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 3} {
		if !got[i].Found || errs[i] != nil {
			t.Fatalf("record %d: %v", i, errs[i])
		}
		if hex.EncodeToString(got[i].Address[:]) != "9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f" {
			t.Fatalf("record %d: address %x", i, got[i].Address)
		}
		if string(got[i].PubKey[:]) != string(pub.SerializeUncompressed()) {
			t.Fatalf("record %d: key %x", i, got[i].PubKey)
		}
	}
	for i, code := range map[int]int{1: CodeTxEmpty, 2: CodeTxMalformedRLP} {
		re, ok := errs[i].(*RecordError)
		if got[i].Found || !ok || re.Code != code || re.Index != i {
			t.Fatalf("record %d: %#v, want code %d", i, errs[i], code)
		}
	}
}

// transactionCount is how many transactions the cross-check makes: a quarter of perAlgorithm
// (25,000 by default), because btcec's SignCompact costs some three scalar multiplications in
// pure Go and would dominate the package's test time; CHAINSIG_GO_CROSSCHECK_N=400000 makes 10^5.
var transactionCount = perAlgorithm / 4

func TestRecoverTransactionsAgainstBtcec(t *testing.T) {
	ctx := openT(t)
	keys := btcecKeys(t)
	cases := make([]txCase, transactionCount)
	parallel(transactionCount, 5, func(i int, rng *rand.Rand) {
		cases[i] = randomTx(rng, keys[i%len(keys)])
	})
	txs := make([][]byte, len(cases))
	for i := range cases {
		txs[i] = cases[i].raw
	}
	var cpu *Context
	if backend() != "cpu" {
		var err error
		if cpu, err = Open("cpu"); err != nil {
			t.Fatal(err)
		}
		defer cpu.Close()
	}
	found := 0
	for from := 0; from < len(txs); from += 8192 {
		to := from + 8192
		if to > len(txs) {
			to = len(txs)
		}
		got, errs, err := ctx.RecoverTransactions(txs[from:to])
		if err != nil {
			t.Fatal(err)
		}
		for k, rec := range got {
			i, c := from+k, cases[from+k]
			if c.key != nil {
				pub := c.key.PubKey().SerializeUncompressed()
				if !rec.Found || errs[k] != nil || string(rec.PubKey[:]) != string(pub) ||
					string(rec.Address[:]) != string(keccak(pub[1:])[12:]) {
					t.Fatalf("record %d (%x): found %v (%v), key %x, want %x", i, c.raw, rec.Found, errs[k], rec.PubKey, pub)
				}
				found++
				continue
			}
			re, ok := errs[k].(*RecordError)
			if rec.Found || !ok || re.Code != c.code {
				t.Fatalf("record %d (%x): %#v, want code %d", i, c.raw, errs[k], c.code)
			}
		}
		if cpu == nil {
			continue
		}
		want, wantErrs, err := cpu.RecoverTransactions(txs[from:to])
		if err != nil {
			t.Fatal(err)
		}
		for k := range want {
			if want[k] != got[k] || codeOf(wantErrs[k]) != codeOf(errs[k]) {
				t.Fatalf("record %d: %s gives %v (%v), the CPU %v (%v)", from+k, backend(), got[k].Found, errs[k], want[k].Found, wantErrs[k])
			}
		}
	}
	if found < transactionCount/2 || found == transactionCount {
		t.Fatalf("%d of %d recovered: the corruption mix is off", found, transactionCount)
	}
	t.Logf("transactions: %d, %d senders found, every one the signing key's, every refusal its cause (%s)", transactionCount, found, backend())
}

func codeOf(err error) int {
	if re, ok := err.(*RecordError); ok {
		return re.Code
	}
	return 0
}
