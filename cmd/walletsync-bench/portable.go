package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/portable"
	"walletsync/portable/brc39"
	"walletsync/wallet"
)

// `walletsync bench portable` measures the encrypted BRC-39 backup both ways: walletsync's
// streaming export (snapshot view -> canonical BRC-38 -> AES-GCM stream -> file) and its staged
// restore (file -> staging -> new wallet), against @bsv/wallet-toolbox 2.1.26's exportBRC39
// and importBRC39 on the same wallet in the same run (interop/bench-portable.mjs on Node).
//
// Argon2id is the format's deliberate cost (t=7, m=128 MiB, p=1, a couple of seconds and 128
// MiB on both sides, by design), so it is timed apart and the comparison uses the time
// without it. For the same reason each walletsync phase reports two peaks: the whole
// process's, and the one from the end of the key derivation on (Argon2id's freed 128 MiB
// handed back to the OS first, then the kernel's high-water mark reset), which is what the
// streaming promises to bound. Each phase runs in its own process.

// portableRun is one run of one measured phase of `bench portable`, as a walletsync child
// process or the toolbox script prints it (the same JSON field names).
type portableRun struct {
	Mode string `json:"mode"` // idle, export or import
	// Rows is the rows the export wrote or the restore inserted (the user's row included).
	Rows int64 `json:"rows,omitempty"`
	// FileBytes is the BRC-39 file's length; DocumentBytes the BRC-38 document's inside it.
	FileBytes     int64 `json:"fileBytes,omitempty"`
	DocumentBytes int64 `json:"documentBytes,omitempty"`
	// Seconds is the whole operation, Argon2id included; Argon2Seconds Argon2id's share.
	Seconds       float64 `json:"seconds"`
	Argon2Seconds float64 `json:"argon2Seconds"`
	// FileIOSeconds (toolbox only) is writing or reading the file, which its API leaves to
	// the caller: reported, and not counted in Seconds (walletsync's Seconds include its I/O).
	FileIOSeconds float64 `json:"fileIOSeconds,omitempty"`
	// PeakRSS is the process's peak resident set size over its whole life, Argon2id included.
	PeakRSS int64 `json:"peakRSSBytes"`
	// PeakRSSAfterKDF (walletsync only) is the peak from the end of the key derivation to the
	// end of the phase; 0 where the platform cannot reset the peak (Linux can).
	PeakRSSAfterKDF int64 `json:"peakRSSAfterKDFBytes,omitempty"`
}

// portablePhase is one phase of the report: its runs combined (median times, highest
// peaks), with what the parent derives from them.
type portablePhase struct {
	portableRun
	Runs int `json:"runs,omitempty"`
	// WorkSeconds is Seconds less Argon2Seconds (the median over the runs).
	WorkSeconds float64 `json:"secondsExcludingArgon2"`
	// MBPerSec is DocumentBytes (10^6 bytes) per second of WorkSeconds.
	MBPerSec float64 `json:"documentMBPerSecExcludingArgon2"`
	// RSSGrowth is PeakRSS above the idle process of the same side; RSSGrowthAfterKDF is
	// PeakRSSAfterKDF above it.
	RSSGrowth         int64 `json:"rssGrowthBytes"`
	RSSGrowthAfterKDF int64 `json:"rssGrowthAfterKDFBytes,omitempty"`
}

// portableSide is one implementation's phases on one fixture.
type portableSide struct {
	Side    string        `json:"side"` // walletsync or toolbox
	Fixture string        `json:"fixture"`
	Wallet  string        `json:"wallet"`
	Idle    portablePhase `json:"idle"`
	Export  portablePhase `json:"export"`
	Import  portablePhase `json:"import"`
}

// benchGoal is one goal of the issue, checked against this run's numbers.
type benchGoal struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Unit  string  `json:"unit"` // "x" (a ratio), "MiB" or "requests"
	Met   bool    `json:"met"`
	Note  string  `json:"note,omitempty"`
}

// portableBenchReport is the result of `walletsync bench portable`.
type portableBenchReport struct {
	Fixture string          `json:"fixture"`
	KDF     brc39.KDFParams `json:"kdf"`
	Repeat  int             `json:"repeat"`
	// Walletsync and Toolbox ran on the same wallet: the toolbox fixture (or, for tests, the
	// small one).
	Walletsync portableSide `json:"walletsync"`
	Toolbox    portableSide `json:"toolbox"`
	// Large is walletsync alone on the large fixture (--fixture large): the toolbox holds
	// the whole document in memory several times over, which is the point of the comparison.
	Large *portableSide `json:"large,omitempty"`
	// ExportRatio and ImportRatio are walletsync's time over the toolbox's, Argon2id left
	// out of both (goal <= 0.5).
	ExportRatio float64     `json:"exportRatio"`
	ImportRatio float64     `json:"importRatio"`
	Goals       []benchGoal `json:"goals"`
	AllGoalsMet bool        `json:"allGoalsMet"`
}

const (
	portableRatioGoal     = 0.5 // walletsync's time without Argon2id over the toolbox's
	portableRSSGoalMiB    = 64  // peak RSS growth on the large fixture, Argon2id's memory aside
	toolboxBenchScript    = "bench-portable.mjs"
	toolboxPackageSubpath = "node_modules/@bsv/wallet-toolbox"
)

// errNoToolbox marks a machine without the toolbox peer the comparison needs.
var errNoToolbox = errors.New("the @bsv/wallet-toolbox peer is not available")

// errBenchMismatch marks a run whose restore did not insert the rows the export wrote: a
// benchmark of a broken copy measures nothing.
var errBenchMismatch = errors.New("restored rows differ from exported rows")

// RunPortable is `walletsync bench portable`: the walletsync and toolbox phases on the
// compared fixture, runs alternating, then walletsync alone on the large fixture when asked.
func RunPortable(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("portable", "[--fixture toolbox|large] [--repeat N] [--interop DIR] [--dir D] [--json]", out)
	setup := benchFlags(fs, "toolbox: walletsync and the toolbox on the toolbox fixture; large: that, plus walletsync on the large fixture (about 1 GB, generated once); small: for tests")
	repeat := fs.Int("repeat", 1, "runs of each phase on the compared fixture, walletsync's and the toolbox's alternating; the median time is reported (the large fixture runs once)")
	interop := fs.String("interop", "", "the folder of the installed toolbox peer, interop/ of the walletsync source (default: found from the current folder up)")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if *repeat < 1 {
		return fmt.Errorf("%w: --repeat must be at least 1", command.ErrUsage)
	}
	if _, err := localstore.ParseFixture(*setup.fixture); err != nil {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	// Look for the toolbox before generating anything: without it there is no baseline.
	peerDir, err := findToolboxPeer(*interop)
	if err != nil {
		return err
	}
	f, path, identity, progress, err := setup.prepare(ctx, out)
	if err != nil {
		return err
	}
	compared, comparedPath := f, path
	var large *portableSide
	if f == localstore.FixtureLarge {
		large = &portableSide{Side: "walletsync", Fixture: string(f), Wallet: path}
		compared = localstore.FixtureToolbox
		if comparedPath, _, err = benchWallet(ctx, *setup.dir, compared, progress); err != nil {
			return err
		}
	}
	work, err := os.MkdirTemp("", "walletsync-bench-portable-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	pwFile, err := writeBenchPassword(work)
	if err != nil {
		return err
	}
	// The toolbox's makeAvailable may write to its store: it gets a copy of the bench wallet.
	toolboxWallet := filepath.Join(work, "toolbox-source.sqlite")
	if err := safefile.CopyNew(comparedPath, toolboxWallet); err != nil {
		return err
	}

	rep := portableBenchReport{Fixture: string(f), KDF: brc39.DefaultKDFParams, Repeat: *repeat,
		Walletsync: portableSide{Side: "walletsync", Fixture: string(compared), Wallet: comparedPath},
		Toolbox:    portableSide{Side: "toolbox", Fixture: string(compared), Wallet: comparedPath},
		Large:      large,
	}
	ws := func(fixture localstore.Fixture, db, mode string, run, runs int) (portableRun, error) {
		fmt.Fprintf(progress, "measuring walletsync %s (%s fixture, run %d of %d)...\n", mode, fixture, run+1, runs)
		file := filepath.Join(work, fmt.Sprintf("walletsync-%s-%d.brc39", fixture, run))
		p, err := runPortableChild(ctx, exeSelf, []string{"portable-child", "--mode", mode, "--db", db,
			"--identity", identity, "--password-file", pwFile, "--file", file,
			"--target", filepath.Join(work, fmt.Sprintf("walletsync-%s-restored-%d.sqlite", fixture, run)),
			"--staging", filepath.Join(work, "staging")})
		return p, command.Cancelled(ctx, err)
	}
	tb := func(mode string, run, runs int) (portableRun, error) {
		fmt.Fprintf(progress, "measuring toolbox %s (%s fixture, run %d of %d)...\n", mode, compared, run+1, runs)
		file := filepath.Join(work, fmt.Sprintf("toolbox-%d.brc39", run))
		args := []string{filepath.Join(peerDir, toolboxBenchScript), "idle", "--db", toolboxWallet}
		switch mode {
		case "export":
			args = []string{args[0], "export39", "--db", toolboxWallet, "--identity", identity, "--password-file", pwFile, "--out", file}
		case "import":
			args = []string{args[0], "import39", "--db", filepath.Join(work, fmt.Sprintf("toolbox-restored-%d.sqlite", run)),
				"--in", file, "--password-file", pwFile}
		}
		p, err := runPortableChild(ctx, "node", args)
		return p, command.Cancelled(ctx, err)
	}

	wsIdle, err := ws(compared, comparedPath, "idle", 0, 1)
	if err != nil {
		return err
	}
	tbIdle, err := tb("idle", 0, 1)
	if err != nil {
		return err
	}
	rep.Walletsync.Idle, rep.Toolbox.Idle = portablePhase{portableRun: wsIdle, Runs: 1}, portablePhase{portableRun: tbIdle, Runs: 1}
	var wsExports, wsImports, tbExports, tbImports []portableRun
	for run := range *repeat {
		steps := []struct {
			measure func() (portableRun, error)
			into    *[]portableRun
		}{
			{func() (portableRun, error) { return ws(compared, comparedPath, "export", run, *repeat) }, &wsExports},
			{func() (portableRun, error) { return tb("export", run, *repeat) }, &tbExports},
			{func() (portableRun, error) { return ws(compared, comparedPath, "import", run, *repeat) }, &wsImports},
			{func() (portableRun, error) { return tb("import", run, *repeat) }, &tbImports},
		}
		for _, s := range steps {
			p, err := s.measure()
			if err != nil {
				return err
			}
			*s.into = append(*s.into, p)
		}
	}
	rep.Walletsync.Export = combinePhases(wsExports, rep.Walletsync.Idle)
	rep.Walletsync.Import = combinePhases(wsImports, rep.Walletsync.Idle)
	rep.Toolbox.Export = combinePhases(tbExports, rep.Toolbox.Idle)
	rep.Toolbox.Import = combinePhases(tbImports, rep.Toolbox.Idle)
	if err := checkRestored(rep.Walletsync); err != nil {
		return err
	}
	if rep.Toolbox.Import.Rows != rep.Walletsync.Export.Rows {
		return fmt.Errorf("bench portable: walletsync exported %d rows, the toolbox restored %d of the same wallet: %w",
			rep.Walletsync.Export.Rows, rep.Toolbox.Import.Rows, errBenchMismatch)
	}

	if large != nil {
		var runs [3]portableRun
		for i, mode := range []string{"idle", "export", "import"} {
			if runs[i], err = ws(localstore.FixtureLarge, path, mode, 0, 1); err != nil {
				return err
			}
		}
		large.Idle = portablePhase{portableRun: runs[0], Runs: 1}
		large.Export = combinePhases(runs[1:2], large.Idle)
		large.Import = combinePhases(runs[2:3], large.Idle)
		if err := checkRestored(*large); err != nil {
			return err
		}
	}

	rep.ExportRatio = rep.Walletsync.Export.WorkSeconds / rep.Toolbox.Export.WorkSeconds
	rep.ImportRatio = rep.Walletsync.Import.WorkSeconds / rep.Toolbox.Import.WorkSeconds
	rep.Goals = portableGoals(rep)
	rep.AllGoalsMet = true
	for _, g := range rep.Goals {
		rep.AllGoalsMet = rep.AllGoalsMet && g.Met
	}
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) { printPortableBench(w, rep) })
}

// exeSelf names this executable for runPortableChild.
const exeSelf = ""

// checkRestored refuses a run whose restore did not insert every row the export wrote: a
// benchmark of a broken copy measures nothing.
func checkRestored(s portableSide) error {
	if s.Export.Rows == 0 || s.Import.Rows != s.Export.Rows {
		return fmt.Errorf("bench portable on the %s fixture: exported %d rows, restored %d: %w",
			s.Fixture, s.Export.Rows, s.Import.Rows, errBenchMismatch)
	}
	return nil
}

// combinePhases reduces the runs of one phase: the median times, the highest peaks, and the
// growth over idle, the matching idle process.
func combinePhases(runs []portableRun, idle portablePhase) portablePhase {
	p := portablePhase{portableRun: runs[0]}
	var secs, kdf, work, fileIO []float64
	for _, r := range runs {
		secs = append(secs, r.Seconds)
		kdf = append(kdf, r.Argon2Seconds)
		work = append(work, r.Seconds-r.Argon2Seconds)
		fileIO = append(fileIO, r.FileIOSeconds)
		p.PeakRSS = max(p.PeakRSS, r.PeakRSS)
		p.PeakRSSAfterKDF = max(p.PeakRSSAfterKDF, r.PeakRSSAfterKDF)
	}
	p.Runs = len(runs)
	p.Seconds, p.Argon2Seconds, p.WorkSeconds, p.FileIOSeconds = stats.Median(secs), stats.Median(kdf), stats.Median(work), stats.Median(fileIO)
	p.MBPerSec = float64(p.DocumentBytes) / 1e6 / max(p.WorkSeconds, 1e-9)
	p.RSSGrowth = p.PeakRSS - idle.PeakRSS
	if p.PeakRSSAfterKDF > 0 {
		p.RSSGrowthAfterKDF = p.PeakRSSAfterKDF - idle.PeakRSS
	}
	return p
}

// portableGoals checks the goals: walletsync's time without Argon2id at most half the
// toolbox's, export and import; peak RSS growth at most 64 MiB on the large fixture, Argon2id's
// 128 MiB (a constant the format asks for, paid the same by the toolbox) aside.
func portableGoals(rep portableBenchReport) []benchGoal {
	goals := []benchGoal{
		ratioGoal("export time excl. Argon2id, walletsync / toolbox", rep.ExportRatio, rep.Walletsync.Fixture),
		ratioGoal("import time excl. Argon2id, walletsync / toolbox", rep.ImportRatio, rep.Walletsync.Fixture),
	}
	side, note := rep.Walletsync, "the goal names the large fixture: run with --fixture large to check it there"
	if rep.Large != nil {
		side, note = *rep.Large, ""
	}
	for _, p := range []portablePhase{side.Export, side.Import} {
		growth, what := p.RSSGrowthAfterKDF, "after the key derivation"
		if p.PeakRSSAfterKDF == 0 {
			growth, what = p.RSSGrowth, "whole process, Argon2id's 128 MiB included: this platform cannot reset the peak"
		}
		mib := float64(growth) / (1 << 20)
		n := what
		if note != "" {
			n += "; " + note
		}
		goals = append(goals, benchGoal{Name: fmt.Sprintf("%s peak RSS growth, %s fixture", p.Mode, side.Fixture),
			Value: mib, Limit: portableRSSGoalMiB, Unit: "MiB", Met: mib <= portableRSSGoalMiB, Note: n})
	}
	return goals
}

func ratioGoal(name string, ratio float64, fixture string) benchGoal {
	return benchGoal{Name: name + ", " + fixture + " fixture", Value: ratio, Limit: portableRatioGoal, Unit: "x", Met: ratio <= portableRatioGoal}
}

func printPortableBench(w io.Writer, rep portableBenchReport) {
	k := rep.KDF
	fmt.Fprintf(w, "bench portable: BRC-39 export and restore, Argon2id t=%d m=%s p=%d; median of %d run(s) on the %s fixture\n",
		k.Iterations, command.HumanBytes(int64(k.MemoryKiB)<<10), k.Parallelism, rep.Repeat, rep.Walletsync.Fixture)
	fmt.Fprintf(w, "  %-10s %-7s %-6s %7s %10s %8s %8s %8s %7s %10s %10s %10s\n", "side", "fixture", "phase", "rows", "document",
		"total s", "Argon2 s", "excl. s", "MB/s", "peak RSS", "growth", "after KDF")
	sides := []portableSide{rep.Walletsync, rep.Toolbox}
	if rep.Large != nil {
		sides = append(sides, *rep.Large)
	}
	for _, phase := range []string{"export", "import"} {
		for _, s := range sides {
			p := s.Export
			if phase == "import" {
				p = s.Import
			}
			rows, afterKDF := "-", "-"
			if p.Rows > 0 {
				rows = strconv.FormatInt(p.Rows, 10)
			}
			if p.PeakRSSAfterKDF > 0 {
				afterKDF = command.HumanBytes(p.RSSGrowthAfterKDF)
			}
			fmt.Fprintf(w, "  %-10s %-7s %-6s %7s %10s %8.3f %8.3f %8.3f %7.1f %10s %10s %10s\n", s.Side, s.Fixture, phase, rows,
				command.HumanBytes(p.DocumentBytes), p.Seconds, p.Argon2Seconds, p.WorkSeconds, p.MBPerSec, command.HumanBytes(p.PeakRSS),
				command.HumanBytes(p.RSSGrowth), afterKDF)
		}
	}
	fmt.Fprintln(w, "  excl. s: time less Argon2id. MB/s: BRC-38 document bytes (10^6) per second of it. growth: peak RSS")
	fmt.Fprintln(w, "  above an idle process of the same side that opened the wallet; after KDF: the same from the end of")
	fmt.Fprintln(w, "  the key derivation on (Argon2id's freed 128 MiB returned to the OS first).")
	fmt.Fprintf(w, "  toolbox times are its API calls alone; its file I/O (export %.3f s, import %.3f s) is not counted.\n",
		rep.Toolbox.Export.FileIOSeconds, rep.Toolbox.Import.FileIOSeconds)
	fmt.Fprintf(w, "  walletsync / toolbox, time excl. Argon2id: export %.3fx, import %.3fx (goal <= %.1fx)\n",
		rep.ExportRatio, rep.ImportRatio, portableRatioGoal)
	printGoals(w, rep.Goals)
}

// printGoals lists a bench's goals with their values and verdicts.
func printGoals(w io.Writer, goals []benchGoal) {
	fmt.Fprintln(w, "  goals:")
	for _, g := range goals {
		verdict := "met"
		if !g.Met {
			verdict = "NOT met"
		}
		value := fmt.Sprintf("%.3fx (goal <= %.1fx)", g.Value, g.Limit)
		switch g.Unit {
		case "MiB":
			value = fmt.Sprintf("%.1f MiB (goal <= %.0f MiB)", g.Value, g.Limit)
		case "requests":
			value = fmt.Sprintf("%.0f (goal <= %.0f)", g.Value, g.Limit)
		}
		fmt.Fprintf(w, "    %s: %s: %s\n", g.Name, value, verdict)
		if g.Note != "" {
			fmt.Fprintf(w, "      (%s)\n", g.Note)
		}
	}
}

// writeBenchPassword writes a fresh random password, without a newline, to a private file in
// dir: both sides read it byte for byte.
func writeBenchPassword(dir string) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "password")
	return p, os.WriteFile(p, []byte(hex.EncodeToString(b)), 0o600)
}

// findToolboxPeer returns the folder holding bench-portable.mjs and an installed toolbox:
// dir when given, else interop/ in the current folder or the nearest one above it.
func findToolboxPeer(dir string) (string, error) {
	ok := func(d string) bool {
		_, err1 := os.Stat(filepath.Join(d, toolboxBenchScript))
		_, err2 := os.Stat(filepath.Join(d, toolboxPackageSubpath))
		return err1 == nil && err2 == nil
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("%w: node is not on PATH (the toolbox needs Node 20): %w", errNoToolbox, err)
	}
	if dir != "" {
		if !ok(dir) {
			return "", fmt.Errorf("%w: %s holds no %s with %s installed (npm ci there)", errNoToolbox, dir, toolboxBenchScript, toolboxPackageSubpath)
		}
		return dir, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := cwd; ; d = filepath.Dir(d) {
		if ok(filepath.Join(d, "interop")) {
			return filepath.Join(d, "interop"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%w: no interop/%s with the toolbox installed in %s or above; run from the walletsync source (./scripts/test.sh installs it) or give --interop DIR",
				errNoToolbox, toolboxBenchScript, cwd)
		}
	}
}

// runPortableChild runs one measured phase in a process of its own: this executable (name
// exeSelf) or node, and decodes the one JSON object it prints.
func runPortableChild(ctx context.Context, name string, args []string) (portableRun, error) {
	if name == exeSelf {
		exe, err := os.Executable()
		if err != nil {
			return portableRun{}, err
		}
		name = exe
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	// As testkit/toolboxpeer does: the toolbox's collation and times follow these.
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "TZ=UTC")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return portableRun{}, fmt.Errorf("bench phase %s %v: %w", filepath.Base(name), args, ctx.Err())
	}
	var res struct {
		portableRun
		Error string `json:"error"`
	}
	decodeErr := json.Unmarshal(stdout.Bytes(), &res)
	switch {
	case runErr != nil && res.Error != "":
		return portableRun{}, fmt.Errorf("bench phase %s %v: %s: %w", filepath.Base(name), args, res.Error, runErr)
	case runErr != nil:
		return portableRun{}, fmt.Errorf("bench phase %s %v: %w: %s", filepath.Base(name), args, runErr, lastLine(stderr.String()))
	case decodeErr != nil:
		return portableRun{}, fmt.Errorf("bench phase %s %v: %w", filepath.Base(name), args, decodeErr)
	}
	return res.portableRun, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// RunPortableChild measures one walletsync phase of `bench portable` in this process and
// prints its portableRun.
func RunPortableChild(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("portable-child", "", out)
	mode := fs.String("mode", "", "idle, export or import")
	db := fs.String("db", "", "the bench wallet")
	identity := fs.String("identity", "", "its user")
	pwFile := fs.String("password-file", "", "")
	file := fs.String("file", "", "the BRC-39 file: written by export, read by import")
	target := fs.String("target", "", "the new wallet a restore creates")
	staging := fs.String("staging", "", "the import's staging folder")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	res := portableRun{Mode: *mode}
	var peak rssPeak
	var err error
	switch *mode {
	case "idle":
		res, err = benchIdle(ctx, *db)
	case "export":
		res, err = benchExport(ctx, *db, *identity, *pwFile, *file, &peak)
	case "import":
		res, err = benchImport(ctx, *pwFile, *file, *target, *staging, &peak)
	default:
		err = fmt.Errorf("%w: unknown mode %q", command.ErrUsage, *mode)
	}
	if err != nil {
		return err
	}
	res.PeakRSS, res.PeakRSSAfterKDF = peak.total(), peak.afterReset()
	return json.NewEncoder(out).Encode(res)
}

// benchIdle is the baseline process: it opens the wallet and reads its settings.
func benchIdle(ctx context.Context, db string) (portableRun, error) {
	s, err := localstore.Open(ctx, db, localstore.Options{ReadOnly: true})
	if err != nil {
		return portableRun{}, err
	}
	defer s.Close()
	_, err = s.Settings(ctx)
	return portableRun{Mode: "idle"}, err
}

// benchExport writes the user identity's wallet in db to file as BRC-39, as `walletsync
// export` does, and starts peak's second peak when the key is derived.
func benchExport(ctx context.Context, db, identity, pwFile, file string, peak *rssPeak) (portableRun, error) {
	password, err := command.ReadPassword(pwFile, false, command.StdinTerminal{}, "")
	if err != nil {
		return portableRun{}, err
	}
	s, err := localstore.Open(ctx, db, localstore.Options{ReadOnly: true})
	if err != nil {
		return portableRun{}, err
	}
	defer s.Close()
	settings, err := s.Settings(ctx)
	if err != nil {
		return portableRun{}, err
	}
	snap, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{Lifetime: localstore.MaxSnapshotLifetime})
	if err != nil {
		return portableRun{}, err
	}
	defer snap.Close()
	// The export derives its key before it reads the first page.
	v := &command.CountingView{Snapshot: snap, Report: func(int64) { peak.reset() }}
	res, err := portable.ExportBRC39(ctx, v, settings, identity, password, brc39.DefaultKDFParams, file, portable.ExportOptions{})
	if err != nil {
		return portableRun{}, err
	}
	var rows int64
	for _, n := range res.Stats.Rows {
		rows += n
	}
	return portableRun{Mode: "export", Rows: rows, FileBytes: res.Size, DocumentBytes: res.Stats.Bytes,
		Seconds: res.Elapsed.Seconds(), Argon2Seconds: res.KDFTime.Seconds()}, nil
}

// benchImport restores file into the new wallet target, as `walletsync import` does, and
// starts peak's second peak when the key is derived.
func benchImport(ctx context.Context, pwFile, file, target, staging string, peak *rssPeak) (portableRun, error) {
	password, err := command.ReadPassword(pwFile, false, command.StdinTerminal{}, "")
	if err != nil {
		return portableRun{}, err
	}
	fi, err := os.Stat(file)
	if err != nil {
		return portableRun{}, err
	}
	opts := portable.ImportOptions{StagingDir: staging, Open: command.WalletFiles(), Mode: wallet.ImportRestore}
	res, err := portable.Import(ctx, file, password, portable.Target{Path: target}, opts, func(p portable.ImportProgress) {
		// Before the key derivation the import reads only the header, the salt, the nonce
		// and 17 bytes of payload (at most 560 bytes); any later report comes after it.
		if p.Phase != portable.PhaseDecrypting || p.Done > 1024 {
			peak.reset()
		}
	})
	if err != nil {
		return portableRun{}, err
	}
	return portableRun{Mode: "import", Rows: res.Inserts, FileBytes: fi.Size(), DocumentBytes: res.PlaintextBytes,
		Seconds: res.Elapsed.Seconds(), Argon2Seconds: res.KDFTime.Seconds()}, nil
}

// rssPeak measures a process's peak resident set size before and after one reset. Linux
// keeps the peak in /proc/self/status (VmHWM) and lowers it to the current RSS when "5" is
// written to /proc/self/clear_refs. (getrusage's maxrss cannot be lowered, and can carry the
// parent's peak across the vfork+exec that started this process.) Elsewhere only the
// whole-life peak is known.
type rssPeak struct {
	done    bool
	before  int64 // the peak up to the reset
	resetOK bool
}

// reset, on its first call, returns the memory the heap has freed (Argon2id's 128 MiB, once
// the key is derived) to the OS, so that it no longer counts as resident, and starts a new
// peak from the current RSS. Later calls do nothing. Its cost (one forced GC) counts in the
// measured phase's time.
func (r *rssPeak) reset() {
	if r.done {
		return
	}
	r.done = true
	r.before = peakRSS()
	debug.FreeOSMemory()
	r.resetOK = r.before > 0 && os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// total is the peak over the process's whole life.
func (r *rssPeak) total() int64 { return max(peakRSS(), r.before) }

// afterReset is the peak since reset, or 0 when there was none or it could not be reset.
func (r *rssPeak) afterReset() int64 {
	if !r.resetOK {
		return 0
	}
	return peakRSS()
}
