package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// ErrUsage marks errors in how a command was called (exit code 2).
var ErrUsage = errors.New("usage")

// ErrCancelled marks a command stopped by the person (Ctrl-C) at a safe point (exit code
// 130, the shell's convention for SIGINT).
var ErrCancelled = errors.New("cancelled")

// NewFlags returns a flag set for a walletsync command that prints its usage to out on
// --help and returns errors instead of exiting.
func NewFlags(name, synopsis string, out io.Writer) *flag.FlagSet {
	return NewProgramFlags("walletsync", name, synopsis, out)
}

// NewProgramFlags is NewFlags for a command of another program (the lab's binary,
// walletsync-bench), whose usage names that program.
func NewProgramFlags(program, name, synopsis string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(program+" "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: %s %s %s\n\nFlags:\n", program, name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args, refusing stray positional arguments.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	return nil
}

// ParseFlags parses args for a command that takes positional arguments too: a bad flag is
// a usage error (exit code 2), and --help is flag.ErrHelp.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return nil
}

// Required refuses an empty flag value.
func Required(name, value string) error {
	if value == "" {
		return fmt.Errorf("%w: --%s is required", ErrUsage, name)
	}
	return nil
}

// Cancelled turns an error caused by Ctrl-C into ErrCancelled (exit code 130): the import
// stopped at a safe point and a rerun continues it.
func Cancelled(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return ErrCancelled
	}
	return err
}
