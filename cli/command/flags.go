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
// a usage error (exit code 2), and --help is flag.ErrHelp. Flags may come before, between
// or after the positional arguments (`pause DEST --for 2h`, the order a person types and
// the help shows); after "--" everything is positional. fs.Args holds the positional
// arguments in the order given.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// The flag package stops at the first positional argument and at "--", which it
		// swallows; only in the second case is the word before the rest "--".
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Parsing "--" alone sets fs.Args to what follows it and touches no flag.
	return fs.Parse(append([]string{"--"}, positional...))
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
