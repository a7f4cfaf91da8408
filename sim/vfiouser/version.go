package vfiouser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/neuronsim/neuronsim/internal/jsonkeys"
)

// MaxVersionJSON bounds the capabilities JSON of a VERSION message.
const MaxVersionJSON = 4096

// Capabilities are the limits a peer states in its VERSION message; the
// specification's defaults apply to those it leaves out.
type Capabilities struct {
	MaxMsgFDs       uint64 // file descriptors the peer receives in one message (default 1)
	MaxDataXferSize uint64 // largest count of one data transfer to the peer (default 1 MiB)
	MaxDMAMaps      uint64 // DMA mappings valid at once (default 65535)
	PgSizes         uint64 // page sizes supported for DMA mappings, or'ed (default 4096)
	WriteMultiple   bool   // REGION_WRITE_MULTI supported
}

// DefaultCapabilities are the specification's defaults for a peer that
// states none.
func DefaultCapabilities() Capabilities {
	return Capabilities{MaxMsgFDs: 1, MaxDataXferSize: 1 << 20, MaxDMAMaps: 65535, PgSizes: 4096}
}

// capability bounds: a stated value outside them is refused.
const (
	maxCapFDs  = 1 << 16
	maxCapXfer = 1 << 31
	maxCapMaps = 1 << 31
)

// parseVersionData decodes the version data of a VERSION message: empty,
// or a NUL-terminated UTF-8 JSON object with an optional "capabilities"
// object. Unknown capabilities are ignored (later minor versions add
// them); a known one of the wrong type (null included: it is no value,
// not the default) or out of its bounds is an error, as is anything after
// the object.
func parseVersionData(data []byte) (Capabilities, error) {
	caps := DefaultCapabilities()
	if len(data) == 0 {
		return caps, nil
	}
	if len(data) > MaxVersionJSON {
		return caps, fmt.Errorf("version data of %d bytes exceeds %d: %w", len(data), MaxVersionJSON, ErrLimit)
	}
	if data[len(data)-1] != 0 {
		return caps, fmt.Errorf("version data is not NUL-terminated: %w", ErrMessage)
	}
	data = data[:len(data)-1]
	if bytes.IndexByte(data, 0) >= 0 {
		return caps, fmt.Errorf("version data has a NUL inside it: %w", ErrMessage)
	}
	if !utf8.Valid(data) {
		return caps, fmt.Errorf("version data is not UTF-8: %w", ErrMessage)
	}
	if err := jsonkeys.Unique(data); err != nil { // a map keeps the last of two
		return caps, fmt.Errorf("version data: %v: %w", err, ErrMessage)
	}
	var top map[string]json.RawMessage
	if err := decodeOne(data, &top); err != nil {
		return caps, fmt.Errorf("version data: %v: %w", err, ErrMessage)
	}
	if top == nil { // null decodes into no map: it is not an object
		return caps, fmt.Errorf("version data is not an object: %w", ErrMessage)
	}
	raw, ok := top["capabilities"]
	if !ok {
		return caps, nil
	}
	var cm map[string]json.RawMessage
	if err := decodeOne(raw, &cm); err != nil || cm == nil {
		return caps, fmt.Errorf("version data: capabilities is not an object: %w", ErrMessage)
	}
	nums := []struct {
		name string
		dst  *uint64
		min  uint64
		max  uint64
	}{
		{"max_msg_fds", &caps.MaxMsgFDs, 0, maxCapFDs},
		{"max_data_xfer_size", &caps.MaxDataXferSize, 1, maxCapXfer},
		{"max_dma_maps", &caps.MaxDMAMaps, 1, maxCapMaps},
		{"pgsizes", &caps.PgSizes, 1, math.MaxUint64},
	}
	for _, n := range nums {
		r, ok := cm[n.name]
		if !ok {
			continue
		}
		v, err := parseUint(r)
		if err != nil {
			return caps, fmt.Errorf("version data: capability %s: %v: %w", n.name, err, ErrMessage)
		}
		if v < n.min || v > n.max {
			return caps, fmt.Errorf("version data: capability %s = %d outside [%d, %d]: %w", n.name, v, n.min, n.max, ErrLimit)
		}
		*n.dst = v
	}
	if r, ok := cm["write_multiple"]; ok {
		// null would decode into the bool as nothing at all: the default.
		if err := decodeOne(r, &caps.WriteMultiple); err != nil || bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
			return caps, fmt.Errorf("version data: capability write_multiple is not a boolean: %w", ErrMessage)
		}
	}
	return caps, nil
}

// decodeOne decodes exactly one JSON value from data into v.
func decodeOne(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the JSON value")
	}
	if _, err := d.Token(); err == nil {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// parseUint decodes a JSON number that is a non-negative integer fitting
// 64 bits (a string, a fraction or an exponent is refused).
func parseUint(r json.RawMessage) (uint64, error) {
	t := bytes.TrimSpace(r)
	v, err := strconv.ParseUint(string(t), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%.40s is not a non-negative integer of 64 bits", t)
	}
	return v, nil
}

// versionReply is the server's capabilities JSON, NUL-terminated: the
// server's own limits, and write_multiple only when the client offered it
// (the reply's capabilities are a subset of the client's).
func versionReply(own Capabilities, clientWriteMultiple bool) []byte {
	c := map[string]any{
		"max_msg_fds":        own.MaxMsgFDs,
		"max_data_xfer_size": own.MaxDataXferSize,
		"max_dma_maps":       own.MaxDMAMaps,
		"pgsizes":            own.PgSizes,
	}
	if clientWriteMultiple {
		c["write_multiple"] = true
	}
	b, _ := json.Marshal(map[string]any{"capabilities": c}) // maps of numbers and booleans always marshal
	return append(b, 0)
}
