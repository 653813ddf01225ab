package command

import (
	"bytes"
	"fmt"
	"os"

	"golang.org/x/term"
)

// Terminal is where a password is typed: the process's terminal, or a test's.
type Terminal interface {
	IsTerminal() bool
	Warn(text string)
	ReadPassword(prompt string) (string, error)
}

// StdinTerminal reads from the controlling terminal on stdin without echo, prompting on
// stderr so that stdout stays clean for --json.
type StdinTerminal struct{}

// lostPasswordWarning is shown before a new backup password is chosen.
const lostPasswordWarning = "A lost password means a lost backup: nobody, walletsync included, can open the file without it.\n"

// ReadPassword returns the password in file, or asks tty for it with prompt when file is
// empty. A file's bytes are the password, less one trailing newline ("\n" or "\r\n") that
// editors and `echo` add; every other byte counts, spaces included. (The toolbox's own tools
// use a file's bytes as they are: a password file for both must not end in a newline.) With
// confirm (a new backup) the password must not be empty, and at the terminal it is asked
// twice, after lostPasswordWarning, and two different answers are refused.
func ReadPassword(file string, confirm bool, tty Terminal, prompt string) (string, error) {
	var pw string
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read the password file: %w", err)
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		pw = string(bytes.TrimSuffix(b, []byte("\r")))
	case !tty.IsTerminal():
		return "", fmt.Errorf("%w: no terminal to ask for the password on; give --password-file", ErrUsage)
	case confirm:
		tty.Warn(lostPasswordWarning)
		first, err := tty.ReadPassword("New backup password: ")
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		again, err := tty.ReadPassword("The same password again: ")
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		if first != again {
			return "", fmt.Errorf("%w: the two passwords differ; nothing was written", ErrUsage)
		}
		pw = first
	default:
		var err error
		if pw, err = tty.ReadPassword(prompt); err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
	}
	if confirm && pw == "" {
		return "", fmt.Errorf("%w: a backup needs a password that is not empty", ErrUsage)
	}
	return pw, nil
}

// IsTerminal reports whether stdin is a terminal.
func (StdinTerminal) IsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

// Warn prints text on stderr.
func (StdinTerminal) Warn(text string) { fmt.Fprint(os.Stderr, text) }

// ReadPassword prints prompt on stderr and reads a line from the terminal without echo.
func (StdinTerminal) ReadPassword(prompt string) (string, error) {
	fmt.Fprint(os.Stderr, prompt)
	b, err := term.ReadPassword(int(os.Stdin.Fd()))
	fmt.Fprintln(os.Stderr)
	return string(b), err
}
