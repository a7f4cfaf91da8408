package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/neuronsim/neuronsim/hw/isa"
	"github.com/neuronsim/neuronsim/hw/isa/asm"
	"github.com/neuronsim/neuronsim/internal/inputfile"
	"github.com/neuronsim/neuronsim/internal/output"
	"github.com/neuronsim/neuronsim/internal/units"
)

// readSource reads a program's source, of at most asm.MaxSource bytes.
func readSource(path string) ([]byte, error) {
	return inputfile.Read(path, asm.MaxSource, asm.MaxSourceWhy)
}

// readBinary reads a program's binary records, at most asm.MaxRecords of
// them.
func readBinary(path string) ([]byte, error) {
	return inputfile.Read(path, asm.MaxRecords*isa.RecordSize, fmt.Sprintf("a program holds at most %d records", asm.MaxRecords))
}

func newAsmCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "asm PROG.s [-o PROG.bin]",
		Short: "Assemble instruction records from their text syntax into a binary of 64-byte records",
		Long: "asm assembles a program written in the text syntax of the 64-byte instruction records\n" +
			"(docs/isa.md; the grammar is the doc of package hw/isa/asm): one record per line,\n" +
			"\".engine NAME\" to choose the engine, \".record HEX\" for a raw record. It checks syntax\n" +
			"and ranges only — the runtime's validators judge the records. Errors are printed as\n" +
			"FILE:LINE:COL: what was expected. The output is the records concatenated, by default\n" +
			"PROG.bin next to PROG.s.",
		Example: "  neuronsim asm matmul.s                  # writes matmul.bin\n" +
			"  neuronsim asm matmul.s -o /tmp/mm.bin\n" +
			"  neuronsim disasm /tmp/mm.bin",
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "output file (default: the input with its extension replaced by .bin)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		in := args[0]
		if err := refuseEmpty(cmd, "output", "-o", out, "name a file, or leave -o out for the default"); err != nil {
			return err
		}
		src, err := readSource(in)
		if err != nil {
			return err
		}
		bin, err := asm.Assemble(in, src)
		if err != nil {
			return err
		}
		dst := out
		if dst == "" {
			dst = strings.TrimSuffix(in, filepath.Ext(in)) + ".bin"
			if dst == in {
				return fmt.Errorf("%s: the default output would overwrite the input; give -o", in)
			}
		}
		if err := checkNotInputs([2]string{"-o", dst}, [2]string{"the source", in}); err != nil {
			return err
		}
		if err := output.WriteFile(dst, bin); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "assembled %s (%d bytes) to %s\n", units.Plural(int64(len(bin)/isa.RecordSize), "record", "records"), len(bin), dst)
		return nil
	}
	return cmd
}

func newDisasmCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "disasm PROG.bin [-o OUT.s]",
		Short: "Disassemble a binary of 64-byte instruction records into their text syntax",
		Long: "disasm prints the records of PROG.bin in the text syntax `neuronsim asm` reads, after a\n" +
			"header comment giving the record count. Every record whose readable form reproduces it\n" +
			"exactly is printed readably (canonical: explicit strides, fixed field order, zero fields\n" +
			"omitted); any other (an unknown opcode, a reserved bit set, …) as \".record HEX\". So\n" +
			"assembling the output gives PROG.bin back, byte for byte.",
		Example: "  neuronsim disasm matmul.bin\n" +
			"  neuronsim disasm matmul.bin -o matmul.s && neuronsim asm matmul.s -o again.bin",
		Args: cobra.ExactArgs(1),
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the text to this file instead of stdout")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		in := args[0]
		if err := refuseEmpty(cmd, "output", "-o", out, "name a file, or leave -o out for the default"); err != nil {
			return err
		}
		bin, err := readBinary(in)
		if err != nil {
			return err
		}
		text, err := asm.Disassemble(bin)
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		n := len(bin) / isa.RecordSize
		head := disasmHeader(in, n, len(bin))
		if out == "" {
			_, err := io.WriteString(cmd.OutOrStdout(), head+text)
			return err
		}
		if err := checkNotInputs([2]string{"-o", out}, [2]string{"the program", in}); err != nil {
			return err
		}
		buf := make([]byte, 0, len(head)+len(text)) // one copy of the text, not two
		if err := output.WriteFile(out, append(append(buf, head...), text...)); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "disassembled %s (%d bytes) to %s\n", units.Plural(int64(n), "record", "records"), len(bin), out)
		return nil
	}
	return cmd
}

// disasmHeader is the comment line disasm writes before the records: the
// file's base name, cut to 255 bytes and quoted if it holds a control
// character (a newline would end the comment), invalid UTF-8, a quote or a
// backslash, so that the line is well within asm.MaxLineLen and asm reads
// it back as a comment.
func disasmHeader(path string, records, size int) string {
	name := filepath.Base(path)
	if len(name) > 255 {
		name = name[:255] + "…"
	}
	if q := strconv.Quote(name); q != `"`+name+`"` {
		name = q
	}
	return fmt.Sprintf("; %s: %s (%d bytes)\n", name, units.Plural(int64(records), "record", "records"), size)
}
