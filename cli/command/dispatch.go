package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Command is one command of a program's command line. Its Run parses its own flags from
// args, so that every command has --help, and writes its report to out.
type Command struct {
	Name    string // as typed, e.g. "wallet create"
	Summary string
	Hidden  bool // helpers a program runs as its own children, not listed
	Run     func(ctx context.Context, args []string, out io.Writer) error
}

// Program is a command line: walletsync's own, or the lab's binary.
type Program struct {
	Name     string // as its usage names it
	Summary  string // the first line of its usage
	Commands []Command
	// Hint, when set, returns a line of advice for a failure (or "" for none), printed
	// under the error.
	Hint func(error) string
}

// Dispatch runs the command whose name is the longest match for the start of args and
// returns the exit code: 0 on success (and for --help), 2 for usage errors (an unknown
// command, ErrUsage), 130 when cancelled (ErrCancelled), 1 for any other failure. With no
// args, or help, it prints the usage to stdout.
func (p Program) Dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		p.usage(stdout)
		return 0
	}
	var match *Command
	var rest []string
	for i := range p.Commands {
		words := strings.Fields(p.Commands[i].Name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == p.Commands[i].Name &&
			(match == nil || len(words) > len(strings.Fields(match.Name))) {
			match, rest = &p.Commands[i], args[len(words):]
		}
	}
	if match == nil {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", p.Name, strings.Join(args, " "))
		p.usage(stderr)
		return 2
	}
	err := match.Run(ctx, rest, stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, match.Name, err)
		return 2
	case errors.Is(err, ErrCancelled):
		fmt.Fprintf(stderr, "%s %s: cancelled\n", p.Name, match.Name)
		return 130
	}
	fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, match.Name, err)
	if p.Hint != nil {
		if hint := p.Hint(err); hint != "" {
			fmt.Fprintf(stderr, "  %s\n", hint)
		}
	}
	return 1
}

func (p Program) usage(w io.Writer) {
	fmt.Fprintln(w, p.Summary)
	fmt.Fprintf(w, "\nUsage: %s <command> [flags]   (%s <command> --help for details)\n", p.Name, p.Name)
	fmt.Fprintln(w, "\nCommands:")
	cmds := append([]Command(nil), p.Commands...)
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		if !c.Hidden {
			fmt.Fprintf(w, "  %-16s %s\n", c.Name, c.Summary)
		}
	}
}
