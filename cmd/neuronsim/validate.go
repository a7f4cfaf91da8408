package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	hwarch "github.com/neuronsim/neuronsim/hw/arch"
	hwisa "github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/internal/units"
	rtarch "github.com/neuronsim/neuronsim/runtime/arch"
	rtisa "github.com/neuronsim/neuronsim/runtime/isa"
	"github.com/neuronsim/neuronsim/runtime/program"
)

// readProgram reads a program: a .s file is assembled, anything else is
// taken as binary records. Both are bounded as asm and disasm bound them
// (a source of asm.MaxSource bytes, a program of asm.MaxRecords records); whether the
// bytes are whole records is the runtime's to say (program.Split, the
// validators).
func readProgram(path string) ([]byte, error) {
	if strings.HasSuffix(path, ".s") || strings.HasSuffix(path, ".asm") {
		src, err := readSource(path)
		if err != nil {
			return nil, err
		}
		return asm.Assemble(path, src)
	}
	return readBinary(path)
}

// checkEnds refuses a program that program.CheckEnds refuses, naming its
// file.
func checkEnds(path string, prog []byte) error {
	if err := program.CheckEnds(prog); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func newValidateCommand() *cobra.Command {
	gen := defaultArch
	var engine string
	cmd := &cobra.Command{
		Use:   "validate FILE [--arch A] [--engine E]",
		Short: "Run the runtime's instruction validators (seed 004) over a program",
		Long: "validate runs ib_final_inst_validity_check over a program (a .s file is assembled first):\n" +
			"each engine's block, split by the records' engine byte, or — with --engine — the whole file as\n" +
			"one block issued on that engine (pe, act, pool, dve or sp; an empty program is valid on none).\n" +
			"On the first invalid record it prints the runtime's message,\n" +
			"the record disassembled and the debug reason, and exits non-zero.",
		Example: "  neuronsim validate prog.s --arch cayman\n" +
			"  neuronsim validate prog.bin --arch sunda --engine dve",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var issue hwisa.Engine
			if cmd.Flags().Changed("engine") {
				e, err := recordEngine(engine)
				if err != nil {
					return err
				}
				issue = e
			}
			prog, err := readProgram(args[0])
			if err != nil {
				return err
			}
			var d rtarch.Dispatch
			devID, err := defaultDeviceID(gen)
			if err != nil {
				return err
			}
			v, err := selectValidator(&d, devID)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var blocks []program.Block
			var valid int
			if cmd.Flags().Changed("engine") {
				if err := program.CheckSize(prog); err != nil {
					return fmt.Errorf("%s: %w", args[0], err) // an empty program is not valid on any engine
				}
				blocks = []program.Block{{Engine: issue, Bytes: prog}}
				valid, err = program.ValidateBlocks(blocks, v)
			} else {
				blocks, valid, err = program.Validate(prog, v)
			}
			for _, b := range blocks[:valid] {
				fmt.Fprintf(out, "%s block: %s valid on %s\n", b.Engine, units.Plural(int64(len(b.Bytes)/hwisa.RecordSize), "record", "records"), gen)
			}
			if err == nil {
				return nil
			}
			var inv *rtisa.InvalidError
			if valid == len(blocks) || !errors.As(err, &inv) {
				return fmt.Errorf("%s: %w", args[0], err) // Split's error, or the validator's without a record to show
			}
			b := blocks[valid]
			fmt.Fprintf(out, "%s block (%s): %s\n", b.Engine, gen, fmt.Sprintf(rtisa.GoFormat(rtisa.MsgInvalidInstruction), inv.Opcode, inv.Offset))
			fmt.Fprintf(out, "  record: %s\n", asm.FormatRecord(b.Bytes[inv.Offset:inv.Offset+hwisa.RecordSize]))
			fmt.Fprintf(out, "  reason: %s\n", inv.Reason)
			return fmt.Errorf("%s: invalid instruction in the %s block at offset %d", args[0], b.Engine, inv.Offset)
		},
	}
	cmd.Flags().Var(&gen, "arch", "generation: sunda|cayman|mariana, v2|v3|v4, trn1|inf2|trn2|trn3 or 2|3|4")
	cmd.Flags().StringVar(&engine, "engine", "", "validate every record as issued on this engine (pe|act|pool|dve|sp)")
	return cmd
}

// defaultDeviceID is the PCI device id a generation's device reports.
func defaultDeviceID(g hwarch.Generation) (uint16, error) { return hwarch.DefaultDeviceID(g) }

// selectValidator makes the runtime's arch selection from a PCI identity
// and builds the validators from it, as the runtime does once per process.
func selectValidator(d *rtarch.Dispatch, dev uint16) (*rtisa.Validator, error) {
	if _, err := d.Select(hwarch.PCIIdentity{Vendor: hwarch.VendorAmazon, Device: dev}, rtarch.Options{}); err != nil {
		return nil, err
	}
	return rtisa.FromDispatch(d)
}

// recordEngine reads validate's --engine: an engine that issues instruction
// records (pe, act, pool, dve or sp). top_sp is an engine of the device but
// issues none: every record would be refused, and an empty block would pass
// on it, so it is refused as the flag's value.
func recordEngine(s string) (hwisa.Engine, error) {
	const want = "want pe, act, pool, dve or sp"
	if s == "" {
		return 0, fmt.Errorf("--engine: empty: %s, or leave --engine out to split the program by its records' engines", want)
	}
	e, err := hwisa.ParseEngine(units.Word(s))
	switch {
	case err != nil:
		return 0, fmt.Errorf("--engine %q: unknown engine (%s)", s, want)
	case e >= hwisa.TopSP:
		return 0, fmt.Errorf("--engine %s: the %s engine issues no instruction records (%s)", s, e, want)
	}
	return e, nil
}
