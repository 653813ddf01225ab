package command

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"

	"walletsync/internal/stats"
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
	note string // the last Note printed off a terminal
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

// Note shows text, a line that matters off a terminal too (a server that does not answer):
// on a terminal it replaces the progress line at once; elsewhere it is printed as a line of
// its own, once for each change of text, so that a log records every change and no repeat.
func (p *ProgressLine) Note(text string) {
	if p.tty {
		p.last = time.Now()
		fmt.Fprintf(p.out, "\r\033[K%s", text)
		return
	}
	if text != p.note {
		fmt.Fprintln(p.out, text)
	}
	p.note = text
}

// ProgressText is a copy's progress as a status line says it: the rows done, of the
// total with a percentage when the total is known (0 means unknown; never 100% before the
// end, because a total is an estimate taken when the copy began), the rate, which reads
// "measuring" until there is one rather than "0 rows/s", and the time left.
func ProgressText(done, total int64, rate float64) string {
	text := fmt.Sprintf("%d rows", done)
	if total > 0 {
		text = fmt.Sprintf("%d/%d rows (%d%%)", done, total, min(done*100/total, 99))
	}
	if rate <= 0 {
		return text + ", measuring the rate"
	}
	text += fmt.Sprintf(", %.0f rows/s", rate)
	if left := stats.ETA(total, done, rate); left > 0 {
		text += ", about " + left.String() + " left"
	}
	return text
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
