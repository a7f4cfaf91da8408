// Package nccom formats collective-communication sweeps the way AWS's
// nccom-test tool prints them, so that neuronsim's fabric experiments
// (all_reduce, all_gather, reduce_scatter, alltoall, permute on simulated
// multi-device systems) can be compared line by line with runs on real
// Trainium and Inferentia hosts.
//
// The package is pure formatting and sweep logic: it knows nothing about the
// simulator. A caller parses the sweep flags with units.ParseBytes (the one
// size grammar of every flag and file, in internal/units) and [Sizes],
// simulates each size, turns each measured time into a [Row] with [NewRow],
// collects the rows in a [Report] and prints it with [Report.WriteTable] or
// [Report.WriteJSON]: the text and JSON a runtime tool prints. Pictures and
// terminal progress bars are the command line's: internal/plot draws bus
// bandwidth against size for several reports, and internal/progress draws a
// progress bar on a terminal while a long sweep runs.
//
// # Sizes
//
// Sizes on the command line follow nccom-test's -b/--minbytes and
// -e/--maxbytes flags and are read by units.ParseBytes: a plain decimal
// integer of bytes, optionally followed by a suffix K, M, G or T (any case,
// optionally followed by B or iB: "4KB", "1gb", "64MiB"). The suffixes are
// powers of 1024, as nccom-test reads them: "1K" is 1024 bytes and "1G" is
// 1<<30 bytes. [FormatSize] prints sizes with the unambiguous IEC spelling
// ("1KiB", "64MiB") that units.ParseBytes reads back.
//
// # Bandwidth unit
//
// Bandwidths are in decimal GB/s: 1 GB/s = 1e9 bytes per second. nccom-test's
// documentation calls the unit GiB, but every nccom-test example published
// since 2025 matches decimal gigabytes only (for example 512 MiB moved in
// 9,689.51 µs gives 55.41 in the printed table, which is 536870912 bytes /
// 9689.51e-6 s / 1e9; in GiB/s it would be 51.60). neuronsim follows what the
// tool prints, not what its documentation says, so that simulated and
// measured tables compare directly. [Report.WriteTable] states the unit in a
// comment line ("# bandwidth unit: GB/s = 1e9 bytes/s; sizes in bytes") above
// the table; lines starting with "#" are comments.
//
// algbw is size / time. busbw is algbw times a factor that depends on the
// collective and on the number of ranks r (see [BusFactor]): 2(r-1)/r for
// all_reduce; (r-1)/r for all_gather, reduce_scatter and alltoall; 1 for
// permute. These are the nccl-tests formulas, which nccom-test follows.
//
// # JSON
//
// [Report.WriteJSON] writes the shape of nccom-test's JSON report:
//
//	{"results":[{"size(B)":1024,"count(elems)":256,"type":"fp32",
//	  "time:avg(us)":58.0,"algbw(GB/s)":0.017655172413793104,
//	  "busbw(GB/s)":0.03420689655172414,"algorithm":"ring"}]}
//
// Each result has exactly those seven keys. Numbers are written at full
// precision (the table rounds them, the JSON does not) so that a report
// reads back exactly. neuronsim adds top-level keys of
// its own only with the prefix "neuronsim_": "neuronsim_op" and
// "neuronsim_ranks" carry [Report.Op] and [Report.Ranks] (when set), and each
// entry of [Report.Extra] is written as "neuronsim_<key>" (for example
// "neuronsim_model":"aware", "neuronsim_devices":32). A reader that knows
// only nccom-test's shape can ignore every key with that prefix.
package nccom

import "errors"

// Sentinel errors. Every error about bad input wraps one of them, so callers
// can test the kind of failure with [errors.Is]; the message adds the
// offending input. Errors from the writer or the file system are returned
// wrapped with context instead (test them with errors.Is as usual).
var (
	// ErrBadSweep reports sweep parameters that [Sizes] rejects.
	ErrBadSweep = errors.New("nccom: bad sweep")
	// ErrUnknownOp reports a collective name that is not one of
	// all_reduce, all_gather, reduce_scatter, alltoall or permute.
	ErrUnknownOp = errors.New("nccom: unknown collective op")
	// ErrBadRanks reports a rank count below 1.
	ErrBadRanks = errors.New("nccom: bad rank count")
	// ErrBadReport reports a row or report that cannot be printed, written,
	// read or plotted: a malformed JSON document, a negative or non-finite
	// number, a missing or unknown key, and the like.
	ErrBadReport = errors.New("nccom: bad report")
)
