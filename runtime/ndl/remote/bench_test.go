package remote

import "testing"

// benchDevice serves one fake on a unix socket and returns a remote handle
// on it.
func benchDevice(b *testing.B) (*Device, *fakeDevice) {
	b.Helper()
	ts := startServer(b, 0x1000, ServerOptions{})
	c := dialTest(b, ts)
	d, err := c.Device(0)
	if err != nil {
		b.Fatal(err)
	}
	return d, ts.fakes[0]
}

// BenchmarkRemoteRead32 is one READ round trip over a unix socket, client
// and server in this process (allocs/op counts both).
func BenchmarkRemoteRead32(b *testing.B) {
	d, _ := benchDevice(b)
	if err := d.Write32(0, 0x40, 0xC0FFEE); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := d.Read32(0, 0x40)
		if err != nil || v != 0xC0FFEE {
			b.Fatalf("Read32 = %#x, %v", v, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}

// BenchmarkRemoteWrite32 is one WRITE round trip over a unix socket.
func BenchmarkRemoteWrite32(b *testing.B) {
	d, _ := benchDevice(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Write32(0, 0x40, uint32(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
}

// BenchmarkFakeDeviceRead32Direct is the baseline: the same fake read
// without the wire.
func BenchmarkFakeDeviceRead32Direct(b *testing.B) {
	fake := newFake(0x1000)
	if err := fake.Write32(0, 0x40, 0xC0FFEE); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := fake.Read32(0, 0x40)
		if err != nil || v != 0xC0FFEE {
			b.Fatalf("Read32 = %#x, %v", v, err)
		}
	}
}

// BenchmarkRemoteTransfer1MiB moves 1 MiB a request — the most one
// request carries, as `dma copy --remote` does — to and from a served
// simulated device: host memory (HOST_WRITE, HOST_READ) and device memory
// through BAR4 (WRITE, READ), client and server in this process. The
// server serves a large request in buffers from its pool, so a request
// allocates nothing of its size (before the pool, each 1 MiB request
// allocated 2–3 MiB of buffers that the next collection freed).
func BenchmarkRemoteTransfer1MiB(b *testing.B) {
	ops, _ := largeRequests(b)
	for _, bc := range ops {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.op(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
