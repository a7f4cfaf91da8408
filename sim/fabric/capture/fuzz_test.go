package capture

import (
	"bytes"
	"testing"
)

// seedFrames are valid and near-valid frames for the fuzz corpora.
func seedFrames(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, s := range []struct {
		h Header
		p []byte
	}{
		{Header{Op: OpWrite, Src: 3, Dst: 7, SrcPort: 1, DstPort: 2, Hop: 1, Hops: 2, Seq: 42, Length: 8, Addr: 0x1000, Transfer: 5}, []byte("payload!")},
		{Header{Op: OpReduceWrite, Src: 1, Dst: 2, Flags: FlagFirst | FlagTruncated, Length: 65536}, []byte{1, 2, 3}},
		{Header{Op: OpSemaphore, Src: 65535, Dst: 65535, SrcPort: 255, DstPort: 255, Flags: FlagFirst | FlagLast, Length: 4}, []byte{0, 0, 0, 1}},
		{Header{Op: OpReadReq, Flags: FlagTimingOnly, Length: 128}, nil},
		{Header{Op: OpReadResp, Flags: 0xFF &^ FlagTimingOnly, Length: 1}, []byte{9}},
	} {
		b, err := Frame(&s.h, s.p)
		if err != nil {
			f.Fatalf("seed frame: %v", err)
		}
		out = append(out, b)
	}
	return out
}

func FuzzParseFrame(f *testing.F) {
	for _, b := range seedFrames(f) {
		f.Add(b)
		f.Add(b[:len(b)-1])
		bad := bytes.Clone(b)
		bad[13]++
		f.Add(bad)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, payload, err := ParseFrame(frame)
		if err != nil {
			return
		}
		again, err := Frame(&h, payload)
		if err != nil {
			t.Fatalf("parsed frame does not rebuild: %v\nheader %+v", err, h)
		}
		if !bytes.Equal(again, frame) {
			t.Fatalf("rebuilt frame differs\nin  % x\nout % x", frame, again)
		}
	})
}

func FuzzParseHeader(f *testing.F) {
	for _, b := range seedFrames(f) {
		f.Add(b[ethHeaderSize:])
		f.Add(b[ethHeaderSize : FrameOverhead-1])
	}
	f.Add([]byte{0x4E, 0x53, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		out := make([]byte, HeaderSize)
		if err := h.MarshalTo(out); err != nil {
			t.Fatalf("parsed header does not marshal: %v\nheader %+v", err, h)
		}
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("re-marshalled header differs\nin  % x\nout % x", b[:HeaderSize], out)
		}
	})
}
