package bringup

import (
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
)

// Policy is how long bring-up polls and how often, as the driver does
// (driver-facts §1, §6, §8). Every field is overridable.
type Policy struct {
	ReadyRetries  int           // init-time reads retried while they return 0xDEADBEEF (30)
	ReadyInterval time.Duration // sleep between those retries (1 s)

	AckPoll        time.Duration // poll interval of +0x1EC after a reset trigger (100 ms)
	DeviceRetrig   time.Duration // re-trigger a device reset not acknowledged after this (30 s)
	TPBRetrig      time.Duration // re-trigger a TPB reset not acknowledged after this (10 s)
	ResetGiveUp    time.Duration // give up waiting for the acknowledgement (V2 120 s, V3/V4 480 s)
	StatusRetries  int           // reads of +0x808 waiting for bit 3 to clear (5; ×1000 under EMU/QEMU but V2 QEMU)
	StatusBackoff  time.Duration // sleep after failed status read i (from 0) is i × this (100 ms); also added after QEMU poll i
	QEMUPoll       time.Duration // sleep after every read of the QEMU reset register (2 s)
	QEMUPollTries  int           // reads of the QEMU reset register before giving up (the status retry count)
	SkipReset      bool          // no hardware reset (the driver's no_reset; forced for V4 under EMU)
	RegisterBAR    int           // the PCI BAR of the registers (BAR2 for V2 and V3 under QEMU, driver 2.24.7.0)
	QEMUResetPath  bool          // reset through the QEMU reset register
	QEMUThenFWIO   bool          // V2 QEMU: QEMU register first, then the normal firmware reset
	RoutingRetries int           // routing-id reads retried on 0xDEADBEEF (20 × ReadyInterval)
}

// emuRetryScale is the factor the driver multiplies its reset retry count by
// on emulated devices (retry_count ×1000 on V2 EMU and on V3/V4 EMU and QEMU).
const emuRetryScale = 1000

// DefaultPolicy returns the driver's polling for a generation and mode.
//
// On EMU and QEMU revisions the driver does not trust silicon timings: it
// scales the status retry budget by 1000 (V2 QEMU keeps 5) and, on V4 EMU,
// skips the reset entirely (no_reset). Under QEMU the reset goes through the
// QEMU reset register: on V2 before the normal firmware reset, on V3/V4
// instead of it.
func DefaultPolicy(g hwarch.Generation, mode hwarch.Mode) Policy {
	geo := hwarch.MustGeometry(g)
	p := Policy{
		ReadyRetries: 30, ReadyInterval: time.Second, RoutingRetries: 20,
		AckPoll: 100 * time.Millisecond, DeviceRetrig: 30 * time.Second, TPBRetrig: 10 * time.Second,
		ResetGiveUp:   480 * time.Second,
		StatusRetries: 5, StatusBackoff: 100 * time.Millisecond,
		QEMUPoll:    2 * time.Second,
		RegisterBAR: geo.BAR0.RegisterBAR(mode),
	}
	if g == hwarch.Sunda {
		p.ResetGiveUp = 120 * time.Second
	}
	switch {
	case mode == hwarch.ModeQEMU && g == hwarch.Sunda:
		p.QEMUResetPath, p.QEMUThenFWIO = true, true
	case mode == hwarch.ModeQEMU:
		p.QEMUResetPath = true
		p.StatusRetries *= emuRetryScale
	case mode == hwarch.ModeEMU:
		p.StatusRetries *= emuRetryScale
		p.SkipReset = g == hwarch.Mariana
	}
	p.QEMUPollTries = p.StatusRetries
	return p
}
