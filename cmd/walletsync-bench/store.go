package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"walletsync/cli/command"
	"walletsync/internal/safefile"
	"walletsync/internal/stats"
	"walletsync/localstore"
	"walletsync/syncer"
	"walletsync/wallet"
)

// benchWallet returns a wallet file holding fixture f, made once and reused from dir: the
// large fixture takes minutes to generate.
func benchWallet(ctx context.Context, dir string, f localstore.Fixture, out io.Writer) (path, identity string, err error) {
	return seededWallet(ctx, dir, f, 1, out)
}

// seededWallet is benchWallet for the user of any seed (localstore.FixtureIdentity(seed),
// whose key is localstore.FixtureRootKey(seed)): `bench load` gives each client its own.
func seededWallet(ctx context.Context, dir string, f localstore.Fixture, seed uint64, out io.Writer) (path, identity string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	path = filepath.Join(dir, fmt.Sprintf("bench-%s-seed%d.sqlite", f, seed))
	identity = localstore.FixtureIdentity(seed)
	if _, err := os.Stat(path); err == nil {
		return path, identity, nil
	}
	fmt.Fprintf(out, "generating the %s fixture at %s (once; later runs reuse it)\n", f, path)
	tmp := path + ".building"
	os.Remove(tmp)
	s, err := localstore.Create(ctx, tmp, localstore.CreateOptions{Chain: wallet.ChainTest, StorageName: "bench"}, localstore.Options{})
	if err != nil {
		return "", "", err
	}
	bar := command.NewProgressLine(out)
	_, err = localstore.Seed(ctx, s, f, localstore.SeedOptions{Seed: seed, Progress: func(done, total int) {
		bar.Update(done == total, "seeding %s: %d/%d transactions", f, done, total)
	}})
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", "", err
	}
	for _, suffix := range []string{"-wal", "-shm", ".walletsync-lock"} {
		os.Remove(tmp + suffix) // the store checkpointed its WAL into the file on close
	}
	// Never over a fixture another bench finished meanwhile: it is the same file.
	if err := safefile.RenameNew(tmp, path); errors.Is(err, os.ErrExist) {
		os.Remove(tmp)
	} else if err != nil {
		return "", "", err
	}
	return path, identity, nil
}

func defaultBenchDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "walletsync", "bench")
	}
	return filepath.Join(os.TempDir(), "walletsync-bench")
}

// benchSetup is what every bench command starts with: the fixture to measure on, the folder
// of generated wallets, and --json.
type benchSetup struct {
	fixture, dir *string
	asJSON       *bool
}

func benchFlags(fs *flag.FlagSet, fixtureUsage string) benchSetup {
	return benchSetup{
		fixture: fs.String("fixture", string(localstore.FixtureToolbox), fixtureUsage),
		dir:     fs.String("dir", defaultBenchDir(), "where generated bench wallets are kept"),
		asJSON:  fs.Bool("json", false, "print the result as JSON"),
	}
}

// prepare parses the fixture and returns it with its generated wallet, the wallet's user and
// where progress notes go (nowhere with --json, which prints only the result).
func (b benchSetup) prepare(ctx context.Context, out io.Writer) (f localstore.Fixture, path, identity string, progress io.Writer, err error) {
	if f, err = localstore.ParseFixture(*b.fixture); err != nil {
		return f, "", "", nil, fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	progress = out
	if *b.asJSON {
		progress = io.Discard
	}
	path, identity, err = benchWallet(ctx, *b.dir, f, progress)
	return f, path, identity, progress, err
}

// phase names one measured phase and where its result goes.
type phase struct {
	mode string
	dst  *phaseResult
}

// runPhases measures each phase in its own child process, `walletsync <args(mode)>`, in order.
func runPhases(ctx context.Context, progress io.Writer, args func(mode string) []string, phases ...phase) error {
	for _, p := range phases {
		fmt.Fprintf(progress, "measuring %s...\n", p.mode)
		r, err := runPhase(ctx, args(p.mode)...)
		if err != nil {
			return err
		}
		*p.dst = r
	}
	return nil
}

// phaseResult is what a child process reports for one measured phase.
type phaseResult struct {
	Mode     string  `json:"mode"`
	Rows     int64   `json:"rows"`
	Bytes    int64   `json:"bytes"`
	Pages    int64   `json:"pages"`
	Requests int64   `json:"requests,omitempty"`
	Kind     string  `json:"kind,omitempty"`
	Seconds  float64 `json:"seconds"`
	PeakRSS  int64   `json:"peakRSSBytes"`
	pageTimes
}

// pageTimes is where a sync's time went, summed over its committed pages, in seconds:
// reading the source, preparing the page, waiting for a write grant, and committing.
type pageTimes struct {
	ReadSeconds      float64 `json:"readSeconds"`
	PrepareSeconds   float64 `json:"prepareSeconds"`
	QueueWaitSeconds float64 `json:"queueWaitSeconds"`
	CommitSeconds    float64 `json:"commitSeconds"`
}

// add counts one committed page's timings.
func (t *pageTimes) add(tm syncer.Timings) {
	t.ReadSeconds += tm.Read.Seconds()
	t.PrepareSeconds += tm.Prepare.Seconds()
	t.QueueWaitSeconds += tm.QueueWait.Seconds()
	t.CommitSeconds += tm.Commit.Seconds()
}

func (t pageTimes) summary() string {
	return fmt.Sprintf("read %.3f s, prepare %.3f s, grant wait %.3f s, commit %.3f s", t.ReadSeconds, t.PrepareSeconds, t.QueueWaitSeconds, t.CommitSeconds)
}

func (p phaseResult) rowsPerSec() float64 { return float64(p.Rows) / p.Seconds }
func (p phaseResult) mbPerSec() float64   { return float64(p.Bytes) / 1e6 / p.Seconds }

// runPhase runs `walletsync <args>` in a child process and decodes its JSON result.
func runPhase(ctx context.Context, args ...string) (phaseResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return phaseResult{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return phaseResult{}, fmt.Errorf("bench phase %v: %w: %s", args, err, stderr.String())
	}
	var r phaseResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return r, fmt.Errorf("bench phase %v: %w", args, err)
	}
	return r, nil
}

// storeBenchReport is the result of `walletsync bench store`.
type storeBenchReport struct {
	Fixture string      `json:"fixture"`
	Wallet  string      `json:"wallet"`
	Idle    phaseResult `json:"idle"`
	Scan    phaseResult `json:"scan"`
	Keyset  phaseResult `json:"keyset"`
	// TimeRatio is keyset time / scan time (goal: <= 1.5).
	TimeRatio float64 `json:"timeRatio"`
	// RSSGrowth is the keyset phase's peak RSS above an idle process that only opened the
	// store (goal: small and independent of the wallet's size).
	RSSGrowth int64 `json:"rssGrowthBytes"`
}

// RunStore is `walletsync bench store`: it pages through a wallet with keyset pages on a
// snapshot view and with a plain scan, each in a child process, and reports the time ratio
// and the keyset phase's RSS growth.
func RunStore(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("store", "[--fixture toolbox|large|small] [--dir D] [--json]", out)
	setup := benchFlags(fs, "the wallet to page: small, toolbox or large (about 1 GB, generated once)")
	maxRows := fs.Int("max-rows", wallet.MaxPageRows, "page row limit")
	maxBytes := fs.Int64("max-bytes", wallet.DefaultPageBytes, "page byte limit")
	repeat := fs.Int("repeat", 3, "runs of each phase; the median is reported")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := (wallet.Limits{Rows: *maxRows, Bytes: *maxBytes}).Validate(); err != nil {
		return fmt.Errorf("%w: %v", command.ErrUsage, err)
	}
	f, path, identity, progress, err := setup.prepare(ctx, out)
	if err != nil {
		return err
	}
	rep := storeBenchReport{Fixture: string(f), Wallet: path}
	// The scan runs first and warms the page cache for the keyset phase, so the order does
	// not favour paging.
	err = runPhases(ctx, progress, func(mode string) []string {
		return []string{"store-child", "--db", path, "--identity", identity, "--max-rows", fmt.Sprint(*maxRows),
			"--max-bytes", fmt.Sprint(*maxBytes), "--repeat", fmt.Sprint(max(1, *repeat)), "--mode", mode}
	}, phase{"idle", &rep.Idle}, phase{"scan", &rep.Scan}, phase{"keyset", &rep.Keyset})
	if err != nil {
		return err
	}
	rep.TimeRatio = rep.Keyset.Seconds / rep.Scan.Seconds
	rep.RSSGrowth = rep.Keyset.PeakRSS - rep.Idle.PeakRSS
	return command.Report(out, *setup.asJSON, rep, func(w io.Writer) {
		fmt.Fprintf(w, "bench store: %s fixture (%s), median of %d runs\n", f, path, max(1, *repeat))
		for _, p := range []phaseResult{rep.Scan, rep.Keyset} {
			fmt.Fprintf(w, "  %-7s %9d rows %8.1f MB %7.3f s %10.0f rows/s %7.1f MB/s  peak RSS %s\n",
				p.Mode, p.Rows, float64(p.Bytes)/1e6, p.Seconds, p.rowsPerSec(), p.mbPerSec(), command.HumanBytes(p.PeakRSS))
		}
		fmt.Fprintf(w, "  keyset pages: %d (max %d rows, %d bytes each)\n", rep.Keyset.Pages, *maxRows, *maxBytes)
		fmt.Fprintf(w, "  ratio keyset/scan time: %.2fx (goal <= 1.5x)\n", rep.TimeRatio)
		fmt.Fprintf(w, "  keyset RSS above an idle process: %s\n", command.HumanBytes(rep.RSSGrowth))
	})
}

// RunStoreChild measures one phase in this process and prints its phaseResult.
func RunStoreChild(ctx context.Context, args []string, out io.Writer) error {
	fs := labFlags("store-child", "", out)
	db := fs.String("db", "", "")
	identity := fs.String("identity", "", "")
	mode := fs.String("mode", "", "idle, scan or keyset")
	maxRows := fs.Int("max-rows", wallet.MaxPageRows, "")
	maxBytes := fs.Int64("max-bytes", wallet.DefaultPageBytes, "")
	repeat := fs.Int("repeat", 1, "")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	s, err := localstore.Open(ctx, *db, localstore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	res := phaseResult{Mode: *mode}
	var times []float64
	for range *repeat {
		start := time.Now()
		switch *mode {
		case "idle":
			_, err = s.Settings(ctx)
		case "scan":
			res.Rows, res.Bytes, err = s.ScanAll(ctx)
		case "keyset":
			res.Rows, res.Bytes, res.Pages, err = pageAll(ctx, s, *identity, wallet.Limits{Rows: *maxRows, Bytes: *maxBytes})
		default:
			err = fmt.Errorf("%w: unknown mode %q", command.ErrUsage, *mode)
		}
		if err != nil {
			return err
		}
		times = append(times, time.Since(start).Seconds())
	}
	res.Seconds = stats.Median(times)
	res.PeakRSS = peakRSS()
	return json.NewEncoder(out).Encode(res)
}

// pageAll reads every table of the identity through one snapshot view.
func pageAll(ctx context.Context, s *localstore.Store, identity string, limits wallet.Limits) (rows, size, pages int64, err error) {
	v, err := s.OpenSnapshot(ctx, localstore.SnapshotOptions{Lifetime: localstore.MaxSnapshotLifetime})
	if err != nil {
		return 0, 0, 0, err
	}
	defer v.Close()
	for _, t := range wallet.AllTables {
		var after wallet.Cursor
		for {
			p, err := v.ReadPage(ctx, wallet.PageRequest{Table: t.Name, IdentityKey: identity, After: after, Limits: limits})
			var big *wallet.RowTooLargeError
			if errors.As(err, &big) {
				p, err = v.ReadPage(ctx, wallet.PageRequest{Table: t.Name, IdentityKey: identity, After: after, Limits: wallet.Limits{Rows: 1, Bytes: big.Charge}})
			}
			if err != nil {
				return rows, size, pages, err
			}
			pages++
			rows += int64(len(p.Rows))
			for _, r := range p.Rows {
				size += localstore.PayloadBytes(r)
			}
			if p.Done {
				break
			}
			after = p.Next
		}
	}
	return rows, size, pages, nil
}
