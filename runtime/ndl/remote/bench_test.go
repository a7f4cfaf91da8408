package remote

import (
	"testing"
)

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
