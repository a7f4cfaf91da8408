package dve

import (
	"crypto/sha256"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Fingerprint returns the dve_tbl_hash of dve_dynamic_config_init: the
// SHA-256 of one sha256_update per table, in the order opcode, control-fast,
// control-slow, datapath, parameter RAM. On sunda control-slow is skipped
// entirely (the loader's arch gate), whatever ControlSlow holds. The hash is a
// content fingerprint that dedups identical DVE configs (the Cache key), not a
// security check. Tables are hashed as given; call Validate first.
func Fingerprint(g hwarch.Generation, t Tables) [32]byte {
	h := sha256.New()
	for _, name := range TableNames() {
		if staged(g, name) {
			h.Write(t.Get(name))
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// FNV-1a 64-bit constants of fnv_64a_buf.
const (
	// FNVPrime64 is the 64-bit FNV prime fnv_64a_buf multiplies by.
	FNVPrime64 uint64 = 0x100000001B3
	// FNVOffset64 is the standard 64-bit FNV offset basis, the usual seed.
	FNVOffset64 uint64 = 0xcbf29ce484222325
)

// FNV64a is fnv_64a_buf (@0x3200c0, backing the kbin ht_buf_* hashtable):
// starting from the caller-supplied seed hval, for each byte b of buf,
// hval = (hval ^ b) * FNVPrime64 (mod 2^64). With seed FNVOffset64 it equals
// hash/fnv's New64a; passing a previous result as the seed continues a hash
// across buffers.
func FNV64a(buf []byte, seed uint64) uint64 {
	h := seed
	for _, b := range buf {
		h = (h ^ uint64(b)) * FNVPrime64
	}
	return h
}
