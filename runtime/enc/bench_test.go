package enc

import "testing"

// BenchmarkBuildRingAllReduce32x1GiB: the schedule of a 32-rank 1 GiB ring
// all-reduce (61 ring steps of 32 transfers plus the copy step).
func BenchmarkBuildRingAllReduce32x1GiB(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(AllReduce, Ring, 32, 1<<30, 4, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildRingAllReduce32x1GiB8Chunks: the same cut into 8 pieces.
func BenchmarkBuildRingAllReduce32x1GiB8Chunks(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(AllReduce, Ring, 32, 1<<30, 4, Options{Chunks: 8}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateRingAllReduce32(b *testing.B) {
	s, err := Build(AllReduce, Ring, 32, 1<<30, 4, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuildMeshAllToAll64(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(AllToAll, Mesh, 64, 64<<20, 4, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunRingAllReduce8x1MiB: the CPU reference executor, fp32.
func BenchmarkRunRingAllReduce8x1MiB(b *testing.B) {
	s, err := Build(AllReduce, Ring, 8, 1<<20, 4, Options{})
	if err != nil {
		b.Fatal(err)
	}
	buf := NewBuffers(s)
	b.SetBytes(s.Size)
	b.ReportAllocs()
	for b.Loop() {
		if err := Apply(s, Float32, buf); err != nil {
			b.Fatal(err)
		}
	}
}
