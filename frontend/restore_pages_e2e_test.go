package frontend_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"walletsync/agent"
	"walletsync/agent/api"
	"walletsync/bundle"
	"walletsync/localstore"
	"walletsync/testkit/toolboxpeer"
)

// TestDashboard_RestoreRefusesAWalletAsBackupFile: a wallet .sqlite typed as the backup
// file is refused at the path step, in words, before the password is asked for.
func TestDashboard_RestoreRefusesAWalletAsBackupFile(t *testing.T) {
	d := newDash(t)
	d.page("restore")
	d.do(typeInto(`.wizard input[name=path]`, d.wallet), chromedp.Click(byText(`.wizard button`, "Use this file")))
	d.waitFor(`document.querySelector('.wizard [data-testid=path-problem]')?.textContent.includes(`+
		jsString(d.wallet+" is a wallet (SQLite database), not a backup file")+`)`, "the wallet refused as a backup file")
	if eval[bool](d, `!!document.querySelector('.wizard input[type=password]')`) {
		t.Error("the wizard asked for the password of a wallet file")
	}
}

// TestDashboard_ExportSuggestsBRC39Names: the export wizard suggests wallet-YYYY-MM-DD.brc39
// beside the wallet, offers a .brc39 name for a folder or a name without it, and refuses
// the backup wallet file and the wallet as its target at the path step, naming the path
// and the reason.
func TestDashboard_ExportSuggestsBRC39Names(t *testing.T) {
	d := newDash(t)
	backupWallet := filepath.Join(d.dir, "backup-wallet.sqlite") // the "Backup wallet" destination's file
	copyFile(t, d.wallet, backupWallet)
	d.page("export")
	d.do(chromedp.Click(byText(`.wizard button`, "Next")))
	d.waitFor(`document.querySelector('.wizard input[name=path]')`, "the where step")
	day := time.Now().UTC().Format("2006-01-02")
	want := filepath.Join(d.dir, "wallet-"+day+".brc39")
	if got := eval[string](d, `document.querySelector('.wizard input[name=path]').value`); got != want {
		t.Errorf("the export suggests %q, want %q", got, want)
	}

	next := chromedp.Click(byText(`.wizard button`, "Next"))
	offer := `document.querySelector('[data-testid=use-brc39-name]')?.textContent ?? ''`
	d.do(typeInto(`.wizard input[name=path]`, d.dir), next)
	d.waitFor(offer+` === `+jsString("Use "+want), "a name offered in the folder")
	d.do(typeInto(`.wizard input[name=path]`, filepath.Join(d.dir, "mine")), next)
	d.waitFor(offer+` === `+jsString("Use "+filepath.Join(d.dir, "mine.brc39")), "the .brc39 name offered")
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=use-brc39-name]`)))
	if got := eval[string](d, `document.querySelector('.wizard input[name=path]').value`); got != filepath.Join(d.dir, "mine.brc39") {
		t.Errorf("the offer put %q in the path field", got)
	}

	problem := `document.querySelector('.wizard [data-testid=path-problem]')?.textContent ?? ''`
	d.do(chromedp.Click(chromedp.CSS(`.wizard input[name=overwrite]`)))
	for _, tt := range []struct{ path, reason string }{
		{backupWallet, backupWallet + ` is the backup wallet file of the destination "Backup wallet"`},
		{d.wallet, d.wallet + " is the wallet itself"},
	} {
		d.do(typeInto(`.wizard input[name=path]`, tt.path), next)
		d.waitFor(problem+`.includes(`+jsString(tt.reason)+`)`, "the refusal of "+tt.path)
		if eval[bool](d, `!!document.querySelector('.password-pair')`) {
			t.Errorf("the export of %s went on to the password", tt.path)
		}
	}
	d.shot("export-backup-wallet-refused")
}

// TestDashboard_RestoreOffersTheBackupFiles: the backup-file step lists the files the
// Backups page lists, newest first, with when each was taken and its destination, and one
// press takes a file to the password step.
func TestDashboard_RestoreOffersTheBackupFiles(t *testing.T) {
	d := newDash(t)
	var task api.Task
	d.api(api.RouteRun, nil, &task, folderID)
	if got := d.wait(task.ID); got.State != api.TaskSucceeded {
		t.Fatalf("the backup ended %s: %s", got.State, got.Error)
	}
	var listing api.BackupListing
	d.api(api.RouteBackups, nil, &listing, folderID)
	if len(listing.Files) != 1 {
		t.Fatalf("the folder lists %+v", listing.Files)
	}
	newest := listing.Files[0].Name
	folder := filepath.Join(d.dir, "backups")
	// An older file of the same wallet, as an earlier backup left it.
	older := newest[:len(newest)-len("20261129T201500Z.brc39")] + "20200102T030405Z.brc39"
	copyFile(t, filepath.Join(folder, newest), filepath.Join(folder, older))

	d.page("restore")
	d.waitFor(`document.querySelectorAll('[data-testid=backup-file-sources] tbody tr').length === 2`, "the two backup files offered")
	rows := eval[[]string](d, `[...document.querySelectorAll('[data-testid=backup-file-sources] tbody tr')].map((r) => r.dataset.file)`)
	if want := []string{filepath.Join(folder, newest), filepath.Join(folder, older)}; !slices.Equal(rows, want) {
		t.Errorf("the files offered are %q, want newest first %q", rows, want)
	}
	taken := eval[[]string](d, `[...document.querySelectorAll('[data-testid=source-taken]')].map((e) => e.textContent)`)
	if len(taken) != 2 || !strings.Contains(taken[1], "2020") || strings.Contains(taken[0], "—") {
		t.Errorf("the files are dated %q", taken)
	}
	where := eval[[]string](d, `[...document.querySelectorAll('[data-testid=source-destination]')].map((e) => e.textContent)`)
	if !slices.Equal(where, []string{"Backup folder", "Backup folder"}) {
		t.Errorf("the files' destinations read %q", where)
	}
	d.shot("restore-backup-files")
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=backup-file-sources] tbody tr button`)))
	d.waitFor(`document.querySelector('.wizard input[type=password]')`, "the password step")
	if got := d.text(".wizard form .path"); got != filepath.Join(folder, newest) {
		t.Errorf("the password step names %q", got)
	}
}

// TestDashboard_ServerRestoreKnowsTheWallet: the server restore offers the configured
// storage server with its stored signer (nothing to type), and its preview says, as a
// backup file's does, what is new, updated and unchanged against the wallet: the server
// holds a backup of this very wallet, so every row is unchanged.
func TestDashboard_ServerRestoreKnowsTheWallet(t *testing.T) {
	d := newDash(t)
	d.stopAgent()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(d.wallet + suffix)
	}
	if _, err := seedWallet(d.wallet, localstore.FixtureSmall, localstore.SeedOptions{Seed: 4}); err != nil {
		t.Fatal(err)
	}
	d.startAgent()
	d.login()
	srv := toolboxpeer.StartServer(t, hex.EncodeToString(localstore.FixtureRootKey(40)))
	key := filepath.Join(d.dir, "identity.key")
	if err := os.WriteFile(key, []byte(hex.EncodeToString(localstore.FixtureRootKey(4))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg api.Config
	d.api(api.RouteServerDestinationAdd, api.ServerDestinationRequest{
		Destination: api.Destination{ID: "toolbox", Name: "Toolbox server", Kind: api.DestinationStorageServer, Path: srv.URL,
			Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, Pause: &api.Pause{}},
		Signer: api.ServerSigner{KeyFile: key}}, &cfg)
	var task api.Task
	d.api(api.RouteRun, nil, &task, "toolbox")
	if got := d.wait(task.ID); got.State != api.TaskSucceeded {
		t.Fatalf("the push ended %s: %s", got.State, got.Error)
	}

	d.page("restore")
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=restore-from-server]`)))
	d.waitFor(`document.querySelector('[data-testid=configured-servers] button[data-destination=toolbox]')`, "the configured server offered")
	if text := d.text(`[data-testid=configured-servers]`); !strings.Contains(text, srv.URL) || !strings.Contains(text, "signed with the key walletsync keeps") {
		t.Errorf("the configured server reads %q", text)
	}
	d.do(chromedp.Click(chromedp.CSS(`[data-testid=configured-servers] button[data-destination=toolbox]`)))
	d.waitFor(`document.querySelector('[data-testid=server-preview] tr[data-table=transactions]')`, "the preview")
	d.shot("server-preview-plan")
	cells := eval[[]string](d, `[...document.querySelectorAll('[data-testid=server-preview] tr[data-table=transactions] td')].map((c) => c.textContent)`)
	// On the server, New, Updated, Unchanged, Skipped (older).
	if want := []string{"6", "0", "0", "6", "0"}; !slices.Equal(cells, want) {
		t.Errorf("the transactions row reads %q, want %q", cells, want)
	}
	heads := eval[[]string](d, `[...document.querySelectorAll('[data-testid=server-preview] thead th')].map((c) => c.textContent)`)
	if want := []string{"What", "On the server", "New", "Updated", "Unchanged", "Skipped (older)"}; !slices.Equal(heads, want) {
		t.Errorf("the preview's columns are %q", heads)
	}
}

// TestDashboard_BundlePreviewSaysWhatIsLost: the bundle restore's preview lists the
// wallet's tables by their names for people, walletsync's own tables and Knex's apart, and
// says what the restore would lose: here the wallet's identity, which the bundle (of
// another identity) lacks, and the rows the wallet holds beyond the bundle's.
func TestDashboard_BundlePreviewSaysWhatIsLost(t *testing.T) {
	d := newDash(t)
	ctx := context.Background()
	source := filepath.Join(d.dir, "source.sqlite")
	if _, err := seedWallet(source, localstore.FixtureSmall, localstore.SeedOptions{Seed: 3, IdentityKey: localstore.FixtureIdentity(2)}); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(d.dir, "bundles")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	name := agent.BundleName(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	src, err := localstore.Open(ctx, source, localstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := bundle.Create(ctx, src, filepath.Join(folder, name), bundle.CreateOptions{})
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	var cfg api.Config
	d.api(api.RouteDestinationAdd, api.Destination{ID: "snapshots", Name: "Snapshots", Kind: api.DestinationBundles, Path: folder,
		Schedule: api.Schedule{Kind: api.ScheduleInterval, Every: api.Duration(time.Hour)}, Pause: &api.Pause{}}, &cfg)
	var census api.WalletCensus
	d.api(api.RouteWalletCensus, api.WalletRef{Path: d.wallet}, &census)
	if len(census.Identities) != 1 || census.Tables["transactions"] <= m.Tables["transactions"] {
		t.Fatalf("the wallet holds %v and %d transactions, the bundle %d: not the case this test needs",
			census.Identities, census.Tables["transactions"], m.Tables["transactions"])
	}

	d.page("restore")
	row := fmt.Sprintf(`[data-testid=bundle-restore] [data-bundle=%q]`, name)
	d.waitFor(fmt.Sprintf(`document.querySelector('%s button')`, row), "the bundle in its folder")
	d.do(chromedp.Click(chromedp.CSS(row + " button")))
	d.waitFor(`document.querySelector('[data-testid=bundle-loss]')`, "what the restore loses")
	d.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid=bundle-loss]').scrollIntoView({block: 'end'})`))
	d.shot("bundle-preview-loss")
	names := func(testid string) []string {
		return eval[[]string](d, `[...document.querySelectorAll('[data-testid=`+testid+`] tbody th')].map((e) => e.textContent)`)
	}
	mine := names("bundle-wallet-tables")
	for _, want := range []string{"Transactions", "Outputs (coins)", "Identity", "Wallet settings"} {
		if !slices.Contains(mine, want) {
			t.Errorf("the wallet's tables %q lack %q", mine, want)
		}
	}
	for _, n := range mine {
		if strings.HasPrefix(n, "walletsync_") || strings.HasPrefix(n, "knex_") || strings.Contains(n, "_") {
			t.Errorf("the wallet's tables list %q", n)
		}
	}
	var own, knex []string
	for table := range m.Tables {
		switch {
		case strings.HasPrefix(table, "walletsync_"):
			own = append(own, table)
		case strings.HasPrefix(table, "knex_migrations"):
			knex = append(knex, table)
		}
	}
	slices.Sort(own)
	slices.Sort(knex)
	if got := slices.Sorted(slices.Values(names("bundle-walletsync-tables"))); len(own) == 0 || !slices.Equal(got, own) {
		t.Errorf("walletsync's own tables read %q, the bundle has %q", got, own)
	}
	if got := slices.Sorted(slices.Values(names("bundle-knex-tables"))); len(knex) == 0 || !slices.Equal(got, knex) {
		t.Errorf("Knex's tables read %q, the bundle has %q", got, knex)
	}
	if got := d.text(`[data-testid=bundle-lost-identities]`); !strings.Contains(got, census.Identities[0][:8]) {
		t.Errorf("the lost identities read %q, want the wallet's %s", got, census.Identities[0])
	}
	lost := fmt.Sprintf("Transactions: %d now, %d in the bundle, at least %d lost", census.Tables["transactions"], m.Tables["transactions"],
		census.Tables["transactions"]-m.Tables["transactions"])
	if got := d.text(`[data-testid=bundle-lost-rows] [data-table=transactions]`); got != lost {
		t.Errorf("the lost transactions read %q, want %q", got, lost)
	}
}
