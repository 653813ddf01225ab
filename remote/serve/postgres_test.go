package serve

import (
	"errors"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"walletsync/localstore"
	"walletsync/pgstore"
	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/remote/wire"
	"walletsync/syncer"
	"walletsync/testkit/compare"
	"walletsync/testkit/httpproxy"
	"walletsync/testkit/toolboxpeer"
	"walletsync/testkit/walletsynctest"
	"walletsync/wallet"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Two `walletsync serve` processes over one PostgreSQL database, one server identity: the
// real toolbox client (StorageClient of 2.1.26) backs the toolbox fixture up through the
// first and a second user's small fixture through the second; the database then holds
// both exactly (read through its BRC-40 producer), an unchanged backup moves nothing, and
// a TS pull of the second user through the first server (the client moved) restores it
// equal in walletsync's and the toolbox's reading. Both offer walletsync's paged wire beside
// it (wire.Detect finds it), whose views they share: a walletsync client's pull of the
// second user, moved to the other server after every request, restores it exactly.
func TestServe_PostgresTwoServersToolboxClient(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "walletsync")
	walletsynctest.BuildSelf(t, exe)
	keyFile := filepath.Join(dir, "server.key")
	if _, err := auth.CreateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	db := cluster.NewDatabase(t)
	first, cmd := startBinary(t, exe, db, keyFile)
	second, _ := startBinary(t, exe, db, keyFile)
	for _, url := range []string{first, second} {
		if status, body := get(t, url+"/"); status != 200 || body != "BRC-100 testNet Storage Provider." {
			t.Fatalf("GET %s/ = %d %q", url, status, body)
		}
		if !wire.Detect(t.Context(), url) {
			t.Fatalf("%s does not offer the paged wire on PostgreSQL", url)
		}
	}

	src := seedWallet(t, localstore.FixtureSmall, 1)
	res := backup(t, first, src)
	requireFirstBackup(t, res)
	small := seedWallet(t, localstore.FixtureSmall, 5)
	backup(t, second, small)

	store, err := pgstore.Open(t.Context(), db, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, w := range []fixtureWallet{src, small} {
		if d := compare.Diff(logicalWallet(t, w.Path, w.Identity), backendWallet(t, store, w.Identity)); d != "" {
			t.Fatalf("the database holds %s's wallet differently from its source:\n%s", wallet.ShortKey(w.Identity, 12), d)
		}
	}

	restored := filepath.Join(dir, "restored.sqlite")
	var pulled step
	toolboxpeer.RunScript(t, &pulled, "storage-client.mjs", "restore", "--url", first, "--key", small.KeyHex, "--db", restored)
	if pulled.Inserts == 0 {
		t.Fatalf("restore: %+v", pulled)
	}
	// A pull keeps the puller's own activeStorage (syncFromReader), as it must.
	sameWallet(t, small.Path, restored, small.Identity, "users.activeStorage")

	// A walletsync client pulls the second user's wallet through the paged wire, moved to
	// the other process after every request: its view opens on one, its pages are read
	// through both, and the copy is exact.
	proxy, err := httpproxy.StartSwitcher(first, second)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	pulledWire := emptyWallet(t)
	if _, err := syncer.Run(t.Context(), wireProvider(t, proxy.URL, 5), pulledWire, small.Identity, syncer.Options{MaxRows: 4, Active: wallet.KeepDestinationActive}); err != nil {
		t.Fatalf("paged-wire pull across both servers: %v", err)
	}
	compare.SameWallet(t, openStore(t, small.Path), pulledWire, small.Identity)
	if a, b := proxy.Served(0, wire.Prefix+"view/read"), proxy.Served(1, wire.Prefix+"view/read"); a == 0 || b == 0 {
		t.Fatalf("pages read through %d and %d: the pull did not move between the servers", a, b)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("walletsync serve after SIGTERM: %v", err)
	}
}

// Two servers with their own pools over one PostgreSQL database, and two clients of one
// identity, one on each, racing processSyncChunk for the same sync state with chunks made
// from the same state: one applies, the other is refused with the typed conflict
// (WERR_INVALID_OPERATION, wallet.ErrCheckpointConflict to a walletsync client) having
// written nothing, and resumes through its own server to an exact copy.
func TestServe_PostgresRacingClientsOneWins(t *testing.T) {
	t.Parallel()
	opts := Options{PostgresURL: cluster.NewDatabase(t), Signer: auth.NewProtoWallet(randomKey(t))}
	servers := []*running{startServer(t, opts), startServer(t, opts)}
	src := seedWallet(t, localstore.FixtureSmall, 1)
	local, err := localstore.Open(t.Context(), src.Path, localstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	from, err := local.MakeAvailable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]*toolbox.Client, len(servers))
	for i, s := range servers {
		if clients[i], err = toolbox.Dial(s.URL, auth.NewProtoWallet(secp256k1.PrivKeyFromBytes(localstore.FixtureRootKey(1))), toolbox.ClientOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := clients[0].FindOrInsertSyncState(t.Context(), src.Identity, from.StorageIdentityKey, from.StorageName)
	if err != nil {
		t.Fatal(err)
	}
	args := st.MakeRequestSyncChunkArgs(src.Identity, servers[0].Settings().StorageIdentityKey, 0, 40)
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		chunk, err := local.GetSyncChunk(t.Context(), args)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.ProcessSyncChunk(t.Context(), args, chunk)
		}()
	}
	wg.Wait()
	loser := -1
	for i, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, wallet.ErrCheckpointConflict) && loser < 0:
			loser = i
		default:
			t.Fatalf("client %d: %v", i, err)
		}
	}
	if loser < 0 {
		t.Fatal("both clients applied the same chunk")
	}
	res, err := syncer.RunChunks(t.Context(), local, clients[loser], src.Identity, syncer.ChunkOptions{Active: wallet.KeepSourceActive, Settle: -1})
	if err != nil {
		t.Fatalf("the loser's resumed push: %v", err)
	}
	if res.Inserts == 0 {
		t.Fatalf("the resumed push inserted nothing: %+v", res.Counters)
	}
	if d := compare.Diff(logicalWallet(t, src.Path, src.Identity), backendWallet(t, servers[1].Backend(), src.Identity)); d != "" {
		t.Fatalf("after the race the server holds a different wallet:\n%s", d)
	}
}
