// Package calibrate fits the collectives' software parameters — the DMA
// engines a rank spreads its transfers over, and the runtime's fixed cost
// of launching a collective — to the two published nccom-test tables the
// project may use (trainium-facts §5.3 (a) and (d)), and reports the error
// per size (docs/timing-model.md §Calibration). It tunes to nothing else.
package calibrate

import (
	"fmt"
	"math"
	"time"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	"github.com/neuronsim/neuronsim/internal/cluster"
	"github.com/neuronsim/neuronsim/runtime/collective"
	"github.com/neuronsim/neuronsim/runtime/enc"
)

// Point is one published measurement: a size in bytes and its average time.
type Point struct {
	Size int64
	Time time.Duration
}

// Target is a published table and the system the model runs it on.
type Target struct {
	Name       string
	Source     string
	Generation hwarch.Generation
	Devices    int
	RanksPer   int // ranks per device
	Op         enc.Op
	Algo       enc.Algo // as the runtime would choose (Auto) unless the source says
	Points     []Point
}

// us is a time in (fractional) microseconds.
func us(v float64) time.Duration { return time.Duration(v * float64(time.Microsecond)) }

// Targets are the two tables (trainium-facts §5.3):
//
//   - (a) 2-rank AllReduce, fp32, one instance, added May 2023: the two
//     NeuronCores of one Trn1 chip (the attribution is uncertain);
//   - (d) 8-rank AllGather, fp32, 2025: taken here as the eight
//     NeuronCores of one Trn2 chip (LNC=1; the instance is not named).
var Targets = []Target{
	{
		Name: "2-rank all_reduce (a)", Source: "trainium-facts §5.3 (a)", Generation: hwarch.Sunda, Devices: 1, RanksPer: 2,
		Op: enc.AllReduce, Algo: enc.Ring,
		Points: []Point{{1 << 10, us(58)}, {4 << 10, us(58)}, {16 << 10, us(58)}, {64 << 10, us(58)}, {256 << 10, us(60)},
			{1 << 20, us(68)}, {4 << 20, us(107)}, {16 << 20, us(332)}, {64 << 20, us(1214)}, {256 << 20, us(4750)}, {1 << 30, us(18930)}},
	},
	{
		Name: "8-rank all_gather (d)", Source: "trainium-facts §5.3 (d)", Generation: hwarch.Cayman, Devices: 1, RanksPer: 8,
		Op: enc.AllGather, Algo: enc.Auto,
		Points: []Point{{1 << 10, us(10.0)}, {8 << 10, us(10.22)}, {64 << 10, us(11.31)}, {512 << 10, us(14.83)}},
	},
}

// Row is one size of a fit: the algorithm the model ran, the published
// time, the model's, and the relative error.
type Row struct {
	Size      int64
	Algo      enc.Algo // never Auto: what it resolved to
	Published time.Duration
	Model     time.Duration
	Error     float64 // (model − published) / published
}

// Fit is the best parameters for a target and the rows they give.
type Fit struct {
	Target     Target
	Engines    int
	LaunchCost time.Duration
	Rows       []Row
	RMS        float64 // root mean square of the relative errors
	// Default holds, when the target's Algo is not Auto, the same sizes
	// run with the algorithm the runtime's policy chooses (enc.Auto) at
	// the fitted engines and launch cost — what `fabric sweep` prints for
	// the target's system by default — against the published times, and
	// DefaultRMS their RMS error; nil when the fit already runs Auto.
	Default    []Row
	DefaultRMS float64
}

// Run models a target's sizes with engines DMA engines per rank and no
// launch cost, and returns the times and the algorithm each size ran.
func Run(t Target, engines int) ([]time.Duration, []enc.Algo, error) {
	ranks := t.Devices * t.RanksPer
	var need uint64
	scheds := make([]*enc.Schedule, len(t.Points))
	for i, p := range t.Points {
		s, err := enc.Build(t.Op, t.Algo, ranks, p.Size, 4, enc.Options{})
		if err != nil {
			return nil, nil, err
		}
		scheds[i] = s
		need = max(need, collective.LayoutOf(s, 0).End)
	}
	c, err := cluster.New(cluster.Config{Generation: t.Generation, Devices: t.Devices, RanksPerDevice: t.RanksPer,
		TimingOnly: true, BufferBytes: need})
	if err != nil {
		return nil, nil, err
	}
	c.Exec.Engines, c.Exec.LaunchCost = engines, 0
	out, algos := make([]time.Duration, len(scheds)), make([]enc.Algo, len(scheds))
	for i, s := range scheds {
		res, err := c.Run(s, enc.Float32)
		if err != nil {
			return nil, nil, fmt.Errorf("calibrate %s, %d bytes: %w", t.Name, s.Size, err)
		}
		out[i], algos[i] = time.Duration(res.TimePS/1000), s.Algo
	}
	return out, algos, nil
}

// Evaluate returns the rows and RMS relative error of given parameters:
// the model's times (no launch cost) and the algorithms they ran.
func Evaluate(t Target, launch time.Duration, model []time.Duration, algos []enc.Algo) ([]Row, float64) {
	rows := make([]Row, len(t.Points))
	var sq float64
	for i, p := range t.Points {
		m := model[i] + launch
		e := float64(m-p.Time) / float64(p.Time)
		rows[i] = Row{Size: p.Size, Algo: algos[i], Published: p.Time, Model: m, Error: e}
		sq += e * e
	}
	return rows, math.Sqrt(sq / float64(len(rows)))
}

// bestLaunch is the launch cost (≥ 0, whole nanoseconds) that minimises
// the squared relative errors of model + launch against the published
// times: Σ (p − m)/p² / Σ 1/p².
func bestLaunch(t Target, model []time.Duration) time.Duration {
	var num, den float64
	for i, p := range t.Points {
		pt := float64(p.Time)
		num += (pt - float64(model[i])) / (pt * pt)
		den += 1 / (pt * pt)
	}
	return max(0, time.Duration(math.Round(num/den)))
}

// FitTarget tries every engine count 1..16 (the NeuronCore's DMA engines),
// each with its best launch cost, and keeps the lowest RMS error. When the
// target fixes its algorithm, the fit's parameters are also run with the
// runtime's policy (Fit.Default), so that what the default sweep gives
// for the same system is shown beside the fit, not hidden by it.
func FitTarget(t Target) (Fit, error) {
	best := Fit{Target: t, RMS: math.Inf(1)}
	for engines := 1; engines <= 16; engines++ {
		model, algos, err := Run(t, engines)
		if err != nil {
			return Fit{}, err
		}
		launch := bestLaunch(t, model)
		rows, rms := Evaluate(t, launch, model, algos)
		if rms < best.RMS {
			best = Fit{Target: t, Engines: engines, LaunchCost: launch, Rows: rows, RMS: rms}
		}
	}
	if t.Algo != enc.Auto {
		auto := t
		auto.Algo = enc.Auto
		model, algos, err := Run(auto, best.Engines)
		if err != nil {
			return Fit{}, err
		}
		best.Default, best.DefaultRMS = Evaluate(auto, best.LaunchCost, model, algos)
	}
	return best, nil
}
