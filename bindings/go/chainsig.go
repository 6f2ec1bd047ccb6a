// Package chainsig verifies batches of SM2, secp256k1 and P-256 signatures, and recovers
// Ethereum senders (from signatures over digests, or from raw signed transactions), through chainsig's C library (libchainsig, crates/capi), on every CPU core
// or an NVIDIA GPU, in process.
//
// Build the library first (cargo build --release -p chainsig-capi) and point cgo at it:
// CGO_LDFLAGS=-L<target>/release, and LD_LIBRARY_PATH=<target>/release to run (test.sh does both).
//
// A Context is safe for use by many goroutines at once. Records are copied into the library's
// packed row format (see crates/capi/include/chainsig.h); nothing the caller passes is kept.
package chainsig

/*
#cgo CFLAGS: -I${SRCDIR}/../../crates/capi/include
#cgo LDFLAGS: -lchainsig
#include <stdlib.h>
#include <chainsig.h>
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"unsafe"
)

// Algorithm is a signature scheme.
type Algorithm uint8

const (
	// SM2 (GB/T 32918.2) on sm2p256v1.
	SM2 Algorithm = C.CS_ALG_SM2
	// Secp256k1 is ECDSA on secp256k1 (Bitcoin, Ethereum).
	Secp256k1 Algorithm = C.CS_ALG_SECP256K1
	// P256 is ECDSA on NIST P-256.
	P256 Algorithm = C.CS_ALG_P256
)

// Hash names the hash of a message record.
type Hash uint8

const (
	// HashDefault is the algorithm's own: SM3 with Z_A for SM2, Keccak-256 for secp256k1,
	// SHA-256 for P-256.
	HashDefault Hash = C.CS_HASH_DEFAULT
	HashSM3     Hash = C.CS_HASH_SM3
	// HashKeccak256 is Ethereum's Keccak-256 (not SHA3-256).
	HashKeccak256 Hash = C.CS_HASH_KECCAK256
	HashSHA256    Hash = C.CS_HASH_SHA256
	HashSHA3_256  Hash = C.CS_HASH_SHA3_256
)

// Record is one signature to verify.
type Record struct {
	Alg Algorithm
	// PubKey is SEC1: 33 bytes compressed or 65 uncompressed.
	PubKey []byte
	// Sig is r ‖ s, 32 bytes each, big-endian.
	Sig []byte
	// Digest is the 32-byte value signed (SM2's e, ECDSA's z). When nil, Message is hashed
	// by the library with Hash instead.
	Digest  []byte
	Message []byte
	Hash    Hash
	// LowS (ECDSA only) rejects s above n/2, as Bitcoin and Ethereum do.
	LowS bool
	// ID is the SM2 signer identifier; nil means the standard default "1234567812345678"
	// (an empty non-nil slice is the empty identifier).
	ID []byte
}

// RecordError says why one record could not be checked (its verdict is invalid).
type RecordError struct {
	Index int
	// Code is the library's CS_REC_* code (0 for errors found before the call).
	Code    int
	Message string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("record %d: %s", e.Index, e.Message)
}

// Error is a failed call: the library's code and message.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("chainsig: %s (code %d)", e.Message, e.Code)
}

// ErrClosed is returned by calls on a closed Context.
var ErrClosed = errors.New("chainsig: context is closed")

// Bitmap holds one verdict a record, 64 to a word, least significant bit first.
type Bitmap struct {
	Words []uint64
	Len   int
}

// Valid reports the verdict of record i.
func (b Bitmap) Valid(i int) bool {
	return b.Words[i/64]>>(uint(i)%64)&1 == 1
}

// AllValid reports whether every record is valid, comparing whole words with all ones.
func (b Bitmap) AllValid() bool {
	full := b.Len / 64
	for _, w := range b.Words[:full] {
		if w != ^uint64(0) {
			return false
		}
	}
	if rest := b.Len % 64; rest != 0 {
		return b.Words[full] == (uint64(1)<<uint(rest))-1
	}
	return true
}

// Invalid lists the records that are not valid, in order; a word of all ones is skipped whole.
func (b Bitmap) Invalid() []int {
	var out []int
	for k, w := range b.Words {
		inv := ^w
		for inv != 0 {
			i := k*64 + bits.TrailingZeros64(inv)
			if i >= b.Len {
				break
			}
			out = append(out, i)
			inv &= inv - 1
		}
	}
	return out
}

// Context is an open verifier. Safe for concurrent use; Close it when done.
type Context struct {
	ctx *C.cs_context
}

// call runs f on one OS thread, so the library's per-thread message belongs to this call.
func call(ctx *C.cs_context, f func() C.int32_t) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	code := f()
	if code == C.CS_OK {
		return nil
	}
	msg := C.GoString(C.cs_last_error(ctx))
	if code == C.CS_ERR_CLOSED {
		return ErrClosed
	}
	return &Error{Code: int(code), Message: msg}
}

// Open starts a verifier: backend "auto" (the GPU for large batches when one starts, the CPU
// otherwise and when the GPU fails), "cpu" or "cuda".
func Open(backend string) (*Context, error) {
	return OpenWithConfig(backend, "")
}

// OpenWithConfig is Open with a JSON object of CUDA settings to override ("" for none: the
// environment variable CHAINSIG_CUDA_CONFIG is read).
func OpenWithConfig(backend, cudaConfig string) (*Context, error) {
	name := C.CString(backend)
	defer C.free(unsafe.Pointer(name))
	var config *C.char
	if cudaConfig != "" {
		config = C.CString(cudaConfig)
		defer C.free(unsafe.Pointer(config))
	}
	c := &Context{}
	err := call(nil, func() C.int32_t { return C.cs_open(name, config, &c.ctx) })
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close waits for submitted batches and releases the verifier. Later calls return ErrClosed.
func (c *Context) Close() error {
	return call(nil, func() C.int32_t { return C.cs_close(c.ctx) })
}

// pack writes records as rows into 8-byte-aligned storage. A record that cannot be written (a
// field of the wrong size) becomes a row of algorithm 0, which the library refuses, and its
// error is returned in its place.
func pack(records []Record) ([]uint64, int, []error) {
	rows := make([]*Record, len(records))
	errs := make([]error, len(records))
	size := 0
	for i := range records {
		rows[i] = &records[i]
		if err := check(rows[i]); err != nil {
			errs[i] = &RecordError{Index: i, Message: err.Error()}
			rows[i] = &Record{PubKey: make([]byte, 33), Sig: make([]byte, 64), Digest: make([]byte, 32)}
		}
		size += rowLen(rows[i])
	}
	words := make([]uint64, (size+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	at := 0
	for _, r := range rows {
		at += putRow(buf[at:], r)
	}
	return words, size, errs
}

func check(r *Record) error {
	switch {
	case len(r.PubKey) != 33 && len(r.PubKey) != 65:
		return fmt.Errorf("pubkey: %d bytes (expected 33 or 65)", len(r.PubKey))
	case len(r.Sig) != 64:
		return fmt.Errorf("sig: %d bytes (expected 64: r ‖ s)", len(r.Sig))
	case r.Digest != nil && len(r.Digest) != 32:
		return fmt.Errorf("digest: %d bytes (expected 32)", len(r.Digest))
	case r.Digest != nil && r.Message != nil:
		return errors.New("digest: give Digest or Message, not both")
	case len(r.Message) > 1<<32-1:
		return errors.New("message: longer than 4 GiB")
	case len(r.ID) > C.CS_MAX_SM2_ID_LEN:
		return fmt.Errorf("id: %d bytes (at most %d)", len(r.ID), C.CS_MAX_SM2_ID_LEN)
	}
	return nil
}

func rowLen(r *Record) int {
	n := C.CS_ROW_HEADER_LEN + len(r.PubKey) + 64 + len(r.ID)
	if r.Digest != nil {
		n += 32
	} else {
		n += len(r.Message)
	}
	return (n + 7) / 8 * 8
}

func putRow(buf []byte, r *Record) int {
	flags := byte(0)
	payload := r.Digest
	if payload == nil {
		flags |= C.CS_FLAG_MESSAGE | byte(r.Hash)<<C.CS_HASH_SHIFT
		payload = r.Message
	}
	if r.LowS {
		flags |= C.CS_FLAG_LOW_S
	}
	if r.ID != nil {
		flags |= C.CS_FLAG_SM2_ID
	}
	buf[0] = byte(r.Alg)
	buf[1] = flags
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint16(buf[8:], uint16(len(r.ID)))
	buf[10] = byte(len(r.PubKey))
	at := C.CS_ROW_HEADER_LEN
	at += copy(buf[at:], r.PubKey)
	at += copy(buf[at:], r.Sig)
	at += copy(buf[at:], payload)
	at += copy(buf[at:], r.ID)
	return (at + 7) / 8 * 8
}

// results turns the library's outputs into a Bitmap and per-record errors.
func results(n int, bitmap []uint64, codes []C.int32_t, pre []error) (Bitmap, []error) {
	errs := pre
	for i, code := range codes {
		if code != C.CS_OK && errs[i] == nil {
			errs[i] = &RecordError{Index: i, Code: int(code), Message: C.GoString(C.cs_status_str(code))}
		}
	}
	return Bitmap{Words: bitmap, Len: n}, errs
}

// VerifyBatch verifies records; verdict i and error i are record i's. A record with an error
// is invalid and never stops the others; the error return is for the call as a whole.
func (c *Context) VerifyBatch(records []Record) (Bitmap, []error, error) {
	n := len(records)
	if n == 0 {
		return Bitmap{}, nil, nil
	}
	words, size, pre := pack(records)
	bitmap := make([]uint64, (n+63)/64)
	codes := make([]C.int32_t, n)
	err := call(c.ctx, func() C.int32_t {
		return C.cs_verify(c.ctx, (*C.uint8_t)(unsafe.Pointer(&words[0])), C.size_t(size), C.size_t(n),
			(*C.uint64_t)(unsafe.Pointer(&bitmap[0])), C.size_t(len(bitmap)), &codes[0])
	})
	runtime.KeepAlive(words)
	if err != nil {
		return Bitmap{}, nil, err
	}
	bm, errs := results(n, bitmap, codes, pre)
	return bm, errs, nil
}

// Ticket is a submitted batch.
type Ticket struct {
	t   *C.cs_ticket
	ctx *C.cs_context
	n   int
	pre []error
}

// Submit queues records for verification and returns at once; several tickets may be in flight.
func (c *Context) Submit(records []Record) (*Ticket, error) {
	n := len(records)
	if n == 0 {
		return nil, &Error{Code: C.CS_ERR_ARGUMENT, Message: "no records"}
	}
	words, size, pre := pack(records)
	t := &Ticket{ctx: c.ctx, n: n, pre: pre}
	err := call(c.ctx, func() C.int32_t {
		return C.cs_submit(c.ctx, (*C.uint8_t)(unsafe.Pointer(&words[0])), C.size_t(size), C.size_t(n), &t.t)
	})
	runtime.KeepAlive(words)
	if err != nil {
		return nil, err
	}
	runtime.SetFinalizer(t, func(t *Ticket) { C.cs_ticket_free(t.t) })
	return t, nil
}

// Done reports whether the batch has finished.
func (t *Ticket) Done() bool {
	return C.cs_poll(t.t) == 1
}

// Wait blocks until the batch finishes and returns what VerifyBatch would have.
func (t *Ticket) Wait() (Bitmap, []error, error) {
	bitmap := make([]uint64, (t.n+63)/64)
	codes := make([]C.int32_t, t.n)
	err := call(t.ctx, func() C.int32_t {
		return C.cs_wait(t.t, (*C.uint64_t)(unsafe.Pointer(&bitmap[0])), C.size_t(len(bitmap)), &codes[0])
	})
	if err != nil {
		return Bitmap{}, nil, err
	}
	bm, errs := results(t.n, bitmap, codes, t.pre)
	return bm, errs, nil
}

// RecoverRequest is an Ethereum signature: the digest signed, r ‖ s and v (y parity, 0 or 1).
type RecoverRequest struct {
	Digest [32]byte
	Sig    [64]byte
	V      byte
}

// Recovered is a signer found by RecoverBatch.
type Recovered struct {
	Found   bool
	Address [20]byte
	// PubKey is uncompressed SEC1 (0x04 ‖ x ‖ y).
	PubKey [65]byte
}

// RecoverBatch finds the signer of each request by go-ethereum's rules for transactions
// (v 0 or 1, s at most n/2). Found is false when there is none.
func (c *Context) RecoverBatch(reqs []RecoverRequest) ([]Recovered, []error, error) {
	n := len(reqs)
	if n == 0 {
		return nil, nil, nil
	}
	items := make([]byte, 0, n*C.CS_RECOVER_ITEM_LEN)
	for _, r := range reqs {
		items = append(items, r.Digest[:]...)
		items = append(items, r.Sig[:]...)
		items = append(items, r.V)
	}
	addrs := make([]byte, n*20)
	keys := make([]byte, n*65)
	found := make([]uint64, (n+63)/64)
	codes := make([]C.int32_t, n)
	err := call(c.ctx, func() C.int32_t {
		return C.cs_recover(c.ctx, (*C.uint8_t)(&items[0]), C.size_t(len(items)), C.size_t(n),
			(*C.uint8_t)(&addrs[0]), (*C.uint8_t)(&keys[0]), (*C.uint64_t)(&found[0]), C.size_t(len(found)), &codes[0])
	})
	if err != nil {
		return nil, nil, err
	}
	out := make([]Recovered, n)
	bm, errs := results(n, found, codes, make([]error, n))
	for i := range out {
		out[i].Found = bm.Valid(i)
		copy(out[i].Address[:], addrs[20*i:])
		copy(out[i].PubKey[:], keys[65*i:])
	}
	return out, errs, nil
}

// Why RecoverTransactions found no sender for a transaction (RecordError.Code): the causes the
// CPU path sorts every refusal into, the same whichever backend decoded it.
const (
	CodeTxEmpty         = C.CS_REC_TX_EMPTY
	CodeTxTooLong       = C.CS_REC_TX_TOO_LONG // above 131072 bytes
	CodeTxType          = C.CS_REC_TX_TYPE     // a type byte other than 1-4
	CodeTxMalformedRLP  = C.CS_REC_TX_RLP      // malformed or non-canonical RLP, a field out of range
	CodeTxTrailingBytes = C.CS_REC_TX_TRAILING // bytes after the transaction
	CodeTxBadV          = C.CS_REC_TX_V        // v or y_parity out of range
	CodeTxHighS         = C.CS_REC_TX_HIGH_S   // s above n/2 (EIP-2)
	CodeTxBadRS         = C.CS_REC_TX_RS       // r or s zero or not below the group order
	CodeTxNoKey         = C.CS_REC_TX_NO_KEY   // no public key recovers from the signature
)

// RecoverTransactions finds the sender of each raw signed Ethereum transaction, exactly as
// sent to a node: an EIP-2718 envelope of type 1 (EIP-2930), 2 (EIP-1559), 3 (EIP-4844 without
// its sidecar) or 4 (EIP-7702), or a legacy transaction with or without EIP-155. The library
// decodes the RLP, rebuilds the signing payload, hashes it and recovers the key (on the GPU
// with "cuda", and "auto" for batches of 4096 and more; the answers are the CPU's). Found is
// false when a transaction has no sender; its error then says why (Code a CS_REC_TX_* cause:
// malformed RLP, bad v, high s, ...). A bad transaction never stops the others.
func (c *Context) RecoverTransactions(txs [][]byte) ([]Recovered, []error, error) {
	n := len(txs)
	if n == 0 {
		return nil, nil, nil
	}
	pre := make([]error, n)
	size := 0
	for i, tx := range txs {
		if uint64(len(tx)) > 1<<32-1 {
			// Sent as an empty row, whose answer is replaced by this error.
			pre[i] = &RecordError{Index: i, Message: fmt.Sprintf("tx: %d bytes (at most 4 GiB)", len(tx))}
			tx = nil
		}
		size += (C.CS_ROW_HEADER_LEN + len(tx) + 7) / 8 * 8
	}
	words := make([]uint64, (size+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	at := 0
	for i, tx := range txs {
		if pre[i] != nil {
			tx = nil
		}
		buf[at] = C.CS_ALG_ETH_TX
		binary.LittleEndian.PutUint32(buf[at+4:], uint32(len(tx)))
		copy(buf[at+C.CS_ROW_HEADER_LEN:], tx)
		at += (C.CS_ROW_HEADER_LEN + len(tx) + 7) / 8 * 8
	}
	addrs := make([]byte, n*20)
	keys := make([]byte, n*65)
	found := make([]uint64, (n+63)/64)
	codes := make([]C.int32_t, n)
	err := call(c.ctx, func() C.int32_t {
		return C.cs_recover_transactions(c.ctx, (*C.uint8_t)(unsafe.Pointer(&words[0])), C.size_t(size), C.size_t(n),
			(*C.uint8_t)(&addrs[0]), (*C.uint8_t)(&keys[0]), (*C.uint64_t)(&found[0]), C.size_t(len(found)), &codes[0])
	})
	runtime.KeepAlive(words)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Recovered, n)
	bm, errs := results(n, found, codes, pre)
	for i := range out {
		out[i].Found = bm.Valid(i) && pre[i] == nil
		if out[i].Found {
			copy(out[i].Address[:], addrs[20*i:])
			copy(out[i].PubKey[:], keys[65*i:])
		}
	}
	return out, errs, nil
}

// LoadSigners replaces the known SM2 signers (uncompressed SEC1 keys, 65 bytes each): the GPU
// backend verifies their records through per-key tables; on the CPU they are only checked.
func (c *Context) LoadSigners(keys [][]byte) error {
	flat := make([]byte, 0, len(keys)*65)
	for i, k := range keys {
		if len(k) != 65 {
			return fmt.Errorf("chainsig: signer %d: %d bytes (expected 65, uncompressed SEC1)", i, len(k))
		}
		flat = append(flat, k...)
	}
	var p *C.uint8_t
	if len(flat) > 0 {
		p = (*C.uint8_t)(&flat[0])
	}
	return call(c.ctx, func() C.int32_t { return C.cs_load_signers(c.ctx, p, C.size_t(len(keys))) })
}
