package chainsig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"

	"github.com/tjfoc/gmsm/sm2"
)

func TestBitmap(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 128, 130} {
		b := Bitmap{Words: make([]uint64, (n+63)/64), Len: n}
		for i := 0; i < n; i++ {
			b.Words[i/64] |= 1 << (uint(i) % 64)
		}
		if !b.AllValid() || len(b.Invalid()) != 0 {
			t.Fatalf("n=%d: all set but AllValid=%v Invalid=%v", n, b.AllValid(), b.Invalid())
		}
		b.Words[(n-1)/64] &^= 1 << (uint(n-1) % 64)
		b.Words[0] &^= 1
		want := []int{0}
		if n > 1 {
			want = append(want, n-1)
		}
		if b.AllValid() || !reflect.DeepEqual(b.Invalid(), want) || b.Valid(0) {
			t.Fatalf("n=%d: Invalid=%v want %v", n, b.Invalid(), want)
		}
	}
}

func p256Record(t *testing.T) Record {
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256([]byte("go binding"))
	r, s, err := ecdsa.Sign(crand.Reader, key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return Record{Alg: P256, PubKey: sec1(key.X, key.Y, true), Sig: append(pad32(r), pad32(s)...),
		Message: []byte("go binding")}
}

func TestRecordErrorsStayWithTheirRecords(t *testing.T) {
	ctx := openT(t)
	good := p256Record(t)
	shortSig, both, badAlg, offCurve := good, good, good, good
	shortSig.Sig = good.Sig[:63]
	both.Digest = make([]byte, 32)
	badAlg.Alg = 9
	offCurve.PubKey = append([]byte{4}, make([]byte, 64)...)
	bm, errs, err := ctx.VerifyBatch([]Record{good, shortSig, both, badAlg, offCurve, good})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(bm.Invalid(), []int{1, 2, 3, 4}) {
		t.Fatalf("invalid: %v", bm.Invalid())
	}
	var re *RecordError
	for i, code := range []int{-1, 0, 0, 3, 6, -1} {
		if code < 0 {
			if errs[i] != nil {
				t.Fatalf("record %d: %v", i, errs[i])
			}
			continue
		}
		if !errors.As(errs[i], &re) || re.Index != i || re.Code != code {
			t.Fatalf("record %d: %#v, want code %d", i, errs[i], code)
		}
	}
}

func TestTicketsAndClose(t *testing.T) {
	ctx, err := Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	good := p256Record(t)
	var tickets []*Ticket
	for k := 0; k < 4; k++ {
		batch := make([]Record, 100+k)
		for i := range batch {
			batch[i] = good
		}
		tk, err := ctx.Submit(batch)
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	for k, tk := range tickets {
		bm, _, err := tk.Wait()
		if err != nil || bm.Len != 100+k || !bm.AllValid() || !tk.Done() {
			t.Fatalf("ticket %d: %v %v", k, bm, err)
		}
	}
	key, err := sm2.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.LoadSigners([][]byte{sec1(key.X, key.Y, false)}); err != nil {
		t.Fatal(err)
	}
	if err := ctx.LoadSigners([][]byte{append([]byte{4}, make([]byte, 64)...)}); err == nil {
		t.Fatal("a key off the curve was loaded")
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ctx.VerifyBatch([]Record{good}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if err := ctx.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := Open("tpu"); err == nil {
		t.Fatal("backend tpu opened")
	}
}
