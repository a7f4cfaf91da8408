package fabric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/sim/fabric/capture"
)

// headerLog keeps the headers a capture writes.
type headerLog struct{ hs []capture.Header }

func (l *headerLog) WritePacket(_ uint64, h capture.Header, _ []byte) error {
	l.hs = append(l.hs, h)
	return nil
}

// A switch port past 255 does not fit the capture header's 8-bit port: the
// capture fails naming the link, instead of writing port 256 as port 0
// (a --what-if star of 300 devices wrote the switch's port to device 256
// as 0, the port to device 0).
func TestCaptureRefusesAPortPastTheHeader(t *testing.T) {
	p := DefaultParams(hwarch.Cayman)
	topo, err := Build(KindStar, hwarch.Cayman, 300, p)
	require.NoError(t, err)
	capt := func(dst int) (*headerLog, error) {
		s := &System{topo: topo, p: p}
		log := &headerLog{}
		s.rec = &recorder{w: log, max: DefaultMaxPackets, pathSeq: map[uint64]uint32{}}
		path, err := topo.Path(0, dst)
		require.NoError(t, err)
		s.recordPackets(0, 0, &Delivery{Src: 0, Dst: dst, Len: 4, Path: path}, make([]uint64, len(path)))
		s.rec.flush(^uint64(0))
		return log, s.rec.err
	}

	log, err := capt(255)
	require.NoError(t, err)
	require.Len(t, log.hs, 2)
	assert.Equal(t, uint8(255), log.hs[1].SrcPort, "the switch's port to device 255")

	log, err = capt(256)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "port 256 does not fit the capture header's 8-bit port")
	assert.Empty(t, log.hs, "no packet with a wrapped port is written")

	// CheckCapture says so before anything runs, for the whole system; a
	// star of 256 devices (ports 0..255) fits.
	err = (&System{topo: topo, p: p}).CheckCapture()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "port 256 does not fit the capture header's 8-bit port")
	fits, err := Build(KindStar, hwarch.Cayman, 256, p)
	require.NoError(t, err)
	assert.NoError(t, (&System{topo: fits, p: p}).CheckCapture())
}
