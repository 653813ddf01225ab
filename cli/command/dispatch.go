package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
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
// args, or help, it prints the usage to stdout; a group's name alone (`wallet`) lists the
// group's commands there. An unknown command is answered with the closest name.
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
		return p.unknown(args, stdout, stderr)
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

// unknown answers args that name no command. A group's name alone (`wallet`) lists the
// group's commands, as help would; anything else is a usage error that names only the words
// typed (not the flags after them) and the command the person probably meant.
func (p Program) unknown(args []string, stdout, stderr io.Writer) int {
	words := args[:1]
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		words = args[:i+1]
	}
	var firsts, group []string
	for _, c := range p.Commands {
		if c.Hidden {
			continue
		}
		first, _, grouped := strings.Cut(c.Name, " ")
		if !slices.Contains(firsts, first) {
			firsts = append(firsts, first)
		}
		if grouped && first == words[0] {
			group = append(group, c.Name)
		}
	}
	if len(group) > 0 && len(words) == 1 {
		p.list(stdout, words[0]+" ")
		return 0
	}
	typed, candidates := words[0], firsts
	if len(group) > 0 {
		typed, candidates = words[0]+" "+words[1], group
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n", p.Name, typed)
	if near := Closest(typed, candidates); len(near) > 0 {
		fmt.Fprintf(stderr, "  did you mean %q?\n", p.Name+" "+near[0])
	}
	if len(group) > 0 {
		p.list(stderr, words[0]+" ")
		return 2
	}
	fmt.Fprintf(stderr, "  %s help lists the commands\n", p.Name)
	return 2
}

// list prints the visible commands whose names start with prefix, sorted.
func (p Program) list(w io.Writer, prefix string) {
	fmt.Fprintln(w, "\nCommands:")
	cmds := append([]Command(nil), p.Commands...)
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		if !c.Hidden && strings.HasPrefix(c.Name, prefix) {
			fmt.Fprintf(w, "  %-16s %s\n", c.Name, c.Summary)
		}
	}
}

func (p Program) usage(w io.Writer) {
	fmt.Fprintln(w, p.Summary)
	fmt.Fprintf(w, "\nUsage: %s <command> [flags]   (%s <command> --help for details)\n", p.Name, p.Name)
	p.list(w, "")
}
