package command

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// Report writes v as one indented JSON document when asJSON is set, else calls text.
func Report(out io.Writer, asJSON bool, v any, text func(w io.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(out)
	return nil
}

// ProgressLine redraws one status line on a terminal at most every 100 ms, and stays
// silent when out is not a terminal (logs and pipes get the final report only).
type ProgressLine struct {
	out  io.Writer
	tty  bool
	last time.Time
}

// NewProgressLine returns a ProgressLine drawn on out.
func NewProgressLine(out io.Writer) *ProgressLine {
	f, ok := out.(*os.File)
	return &ProgressLine{out: out, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// Update redraws the line unless one was drawn within the last 100 ms; final forces it.
func (p *ProgressLine) Update(final bool, format string, args ...any) {
	if !p.tty || (!final && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.out, "\r\033[K"+format, args...)
	if final {
		fmt.Fprintln(p.out)
	}
}

// HumanBytes formats n in binary units.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Terminal reports whether the line is drawn: out is a terminal.
func (p *ProgressLine) Terminal() bool { return p.tty }
