package fabric

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// BenchmarkSnapshotTrn3 copies and saves a timing-only system of 1,024 idle
// Trn3 devices (every DMA engine as its reset left it): the state copy's
// allocations (B/op), and the bytes it encodes to and the file takes.
func BenchmarkSnapshotTrn3(b *testing.B) {
	s, err := New(Config{Generation: hwarch.Mariana, Devices: 1024, Kind: KindSwitch, Ready: true, TimingOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Snapshot()
		}
		b.ReportMetric(float64(s.SnapshotBytes()), "estimate-B")
	})
	b.Run("SaveFile", func(b *testing.B) {
		b.ReportAllocs()
		path := filepath.Join(b.TempDir(), "s.snap")
		var size, decoded int64
		for b.Loop() {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.SaveFile(f); err != nil {
				b.Fatal(err)
			}
			st, _ := f.Stat()
			size = st.Size()
			f.Close()
		}
		hdr := make([]byte, snapshotHeader)
		f, _ := os.Open(path)
		f.Read(hdr)
		f.Close()
		decoded = int64(binary.LittleEndian.Uint64(hdr[24:]))
		b.ReportMetric(float64(size), "file-B")
		b.ReportMetric(float64(decoded), "encoded-B")
	})
}
