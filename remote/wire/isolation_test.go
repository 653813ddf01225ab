package wire

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/wallet"
)

// TestIsolation_OtherIdentityRefused: identity A tries every endpoint on identity B's data
// in a server store that holds both wallets; each attempt is refused, nothing of B's
// changes, and no refusal carries anything of B's that A did not send itself. On both
// backends: a SQLite file, and a PostgreSQL database with its shared views.
func TestIsolation_OtherIdentityRefused(t *testing.T) {
	opts := HandlerOptions{Views: ViewOptions{MaxViewsPerIdentity: 2}}
	for _, be := range []struct {
		name  string
		start func(t *testing.T) *server
	}{
		{"sqlite", func(t *testing.T) *server { return startServer(t, newStore(t, wallet.ChainTest), opts) }},
		{"postgres", func(t *testing.T) *server { return startBackend(t, newPGStore(t, wallet.ChainTest), nil, opts) }},
	} {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			isolation(t, be.start(t))
		})
	}
}

func isolation(t *testing.T, srv *server) {
	ctx := t.Context()
	a, b := fixtureUser(51), fixtureUser(52)
	localA, localB := newStore(t, wallet.ChainTest), newStore(t, wallet.ChainTest)
	seed(t, localA, a, 51)
	seed(t, localB, b, 52)
	pa, pb := provider(t, srv, a, ProviderOptions{}), provider(t, srv, b, ProviderOptions{})
	for _, push := range []struct {
		local  wallet.Source
		remote *Provider
		id     string
	}{{localA, pa, a.id}, {localB, pb, b.id}} {
		if _, err := syncer.Run(ctx, push.local, push.remote, push.id, syncer.Options{Active: wallet.KeepSourceActive}); err != nil {
			t.Fatal(err)
		}
	}
	settingsB, _, err := localB.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sessionB := wallet.SessionKey{SourceStorage: settingsB.StorageIdentityKey, IdentityKey: b.id}
	cpB, err := pb.Checkpoint(ctx, sessionB)
	if err != nil || cpB.Seq == 0 {
		t.Fatalf("B's checkpoint: %+v, %v", cpB, err)
	}
	// What a leak would show: B's source storage, B's checkpoint position.
	secrets := []string{settingsB.StorageIdentityKey, cpB.View, string(cpB.Cursor)}
	refused := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: err = %v, want %v", what, err, want)
			return
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(err.Error(), s) {
				t.Errorf("%s: the refusal shows %q: %v", what, s, err)
			}
		}
	}

	// Pages of B's rows, every table, through A's own view.
	va, err := pa.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range wallet.AllTables {
		p, err := va.ReadPage(ctx, wallet.PageRequest{Table: tb.Name, IdentityKey: b.id})
		refused("read "+string(tb.Name)+" of B", err, wallet.ErrUnauthorized)
		if len(p.Rows) != 0 {
			t.Fatalf("read %s of B returned %d rows", tb.Name, len(p.Rows))
		}
	}
	va.Close()

	// B's sessions: begin, checkpoint, commit.
	st, err := pa.Begin(ctx, sessionB)
	refused("begin B's session", err, wallet.ErrUnauthorized)
	if st.Checkpoint.Seq != 0 {
		t.Fatalf("begin of B's session answered B's checkpoint %+v", st.Checkpoint)
	}
	_, err = pa.Checkpoint(ctx, sessionB)
	refused("read B's checkpoint", err, wallet.ErrUnauthorized)
	forged := wallet.Batch{Chain: wallet.ChainTest, Expect: cpB.Seq, Checkpoint: cpB, Page: wallet.Page{Table: wallet.TableTxLabels}}
	forged.Checkpoint.Seq++
	forged.Checkpoint.Done = true
	_, err = pa.Commit(ctx, forged)
	refused("commit to B's session", err, wallet.ErrUnauthorized)

	// A user row of B's in A's own session (it would merge into B's user row by its key).
	settingsA, _, _ := localA.Describe(ctx)
	vb, err := localB.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	userB, err := vb.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: b.id})
	vb.Close()
	if err != nil {
		t.Fatal(err)
	}
	userB.Rows[0][wallet.Users.Col("activeStorage")] = "stolen"
	sessionA := wallet.SessionKey{SourceStorage: settingsA.StorageIdentityKey, IdentityKey: a.id}
	cpA, _ := pa.Checkpoint(ctx, sessionA)
	_, err = pa.Commit(ctx, wallet.Batch{Chain: wallet.ChainTest, Expect: cpA.Seq, Active: wallet.KeepSourceActive, Page: userB,
		Checkpoint: wallet.Checkpoint{Session: sessionA, Seq: cpA.Seq + 1, Mode: wallet.ModeFull, Done: true}})
	refused("commit B's user row in A's session", err, wallet.ErrUnauthorized)

	// A session of A's that names B's source storage gets id maps of its own: B's source
	// ids lead nowhere, so A's rows can never be made to point at B's.
	vb, err = localB.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	outputsB, err := vb.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableOutputs, IdentityKey: b.id})
	vb.Close()
	if err != nil || len(outputsB.Rows) == 0 {
		t.Fatalf("B's outputs: %v", err)
	}
	borrowed := wallet.SessionKey{SourceStorage: settingsB.StorageIdentityKey, IdentityKey: a.id}
	_, err = pa.Commit(ctx, wallet.Batch{Chain: wallet.ChainTest, Expect: 0, Active: wallet.KeepSourceActive, Page: outputsB,
		Checkpoint: wallet.Checkpoint{Session: borrowed, Seq: 1, Mode: wallet.ModeFull, Table: slices.Index(wallet.SyncOrder, wallet.Outputs)}})
	refused("commit outputs with B's source ids", err, wallet.ErrDanglingReference)

	// B's retained view, by its handle: answered exactly as a handle that never existed.
	vB, err := pb.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	stolen := &remoteView{p: pa, ans: vB.(*remoteView).ans}
	never := &remoteView{p: pa, ans: openViewAnswer{Handle: strings.Repeat("0", 32)}}
	for _, v := range []*remoteView{stolen, never} {
		_, err = v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: a.id})
		refused("read through B's view", err, wallet.ErrSnapshotClosed)
		_, err = v.Resume(wallet.TableOutputs, "")
		refused("resume in B's view", err, wallet.ErrSnapshotClosed)
		v.Close()
	}
	if p, err := vB.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: b.id}); err != nil || len(p.Rows) != 1 {
		t.Fatalf("B's view after A closed its handle: %d rows, %v", len(p.Rows), err)
	}
	vB.Close()

	// Nothing of B's moved, and each identity reads its own wallet, whole.
	if cp, err := pb.Checkpoint(ctx, sessionB); err != nil || cp != cpB {
		t.Fatalf("B's checkpoint after A's attempts: %+v, %v; want %+v", cp, err, cpB)
	}
	compare.SameWallet(t, localB, pb, b.id)
	compare.SameWallet(t, localA, pa, a.id)
	v, err := pb.OpenView(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.ReadPage(ctx, wallet.PageRequest{Table: wallet.TableUsers, IdentityKey: b.id})
	v.Close()
	if err != nil || p.Rows[0][wallet.Users.Col("activeStorage")] == "stolen" {
		t.Fatalf("B's user row: %v, %v", p.Rows, err)
	}
}
