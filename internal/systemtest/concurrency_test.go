package systemtest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/runtime/bringup"
)

// TestCSRManyGoroutinesOneDevice drives one device from many goroutines
// through csr_write/csr_read: INCR on one shared semaphore must count every
// store, and each goroutine's own semaphore and APB register must read back
// what it wrote. Run with -race.
func TestCSRManyGoroutinesOneDevice(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			simDev := newDevice(t, hwarch.Mariana, 0, 1)
			d, err := bringup.BringUp(be.open(t, simDev), bringup.Options{})
			require.NoError(t, err)
			geo := d.Geometry
			const workers, rounds = 32, 200
			incr := d.VA(geo.BAR0.TPBWindow(2) + geo.BAR0.SemIncrOffset)
			read := d.VA(geo.BAR0.TPBWindow(2) + geo.BAR0.SemReadOffset)
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					own := d.VA(geo.BAR0.TPBWindow(w%geo.NeuronCores) + geo.BAR0.SemSetOffset + 4*uint64(8+w))
					reg := d.VA(0x8000_0000 + 0x1000 + 4*uint64(w)) // apb_se_0, a plain register
					for i := 0; i < rounds; i++ {
						if err := d.CSR.Write(incr, 1); err != nil {
							errs <- err
							return
						}
						if err := d.CSR.Write(own, uint32(i)); err != nil {
							errs <- err
							return
						}
						if err := d.CSR.Write(reg, uint32(w<<16|i)); err != nil {
							errs <- err
							return
						}
						got, err := d.CSR.Read(own - 0x400)
						if err == nil && got != uint32(i) {
							t.Errorf("worker %d: own semaphore read %d, wrote %d", w, got, i)
						}
						if got, err = d.CSR.Read(reg); err == nil && got != uint32(w<<16|i) {
							t.Errorf("worker %d: register read %#x, wrote %#x", w, got, w<<16|i)
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			v, err := d.CSR.Read(read)
			require.NoError(t, err)
			assert.Equal(t, uint32(workers*rounds), v, "every INCR counted")
		})
	}
}
