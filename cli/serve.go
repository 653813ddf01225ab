package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"walletsync/cli/command"
	"walletsync/remote/auth"
	"walletsync/remote/serve"
	"walletsync/remote/wire"
	"walletsync/wallet"
)

// serveStore is a kind of store `walletsync serve --db` takes, as its help describes it.
type serveStore struct {
	db    string // how --db names it
	start string // what its first start does
	views string // how the paged wire's view quotas count on it
}

// serveStores are the stores runServe opens, in the order its help lists them.
func serveStores() []serveStore {
	return []serveStore{
		{db: "sqlite:PATH", start: "created on the first start", views: "counted by this server"},
		{db: "postgres://USER@HOST/DB", start: "migrated on the first start; several servers may share it", views: "counted over every server of the database"},
	}
}

// serveMounts are the wires runServe mounts beside the toolbox's JSON-RPC. They are the
// same on every store (the paged wire's backend is the store, whichever it is): the help
// says so from this list, and TestCLI_ServeHelpSaysWhatEachStoreServes checks the help
// against live servers of each store.
func serveMounts(views wire.ViewOptions, log *slog.Logger) []serve.Mount {
	return []serve.Mount{serve.WireMount(views, log)}
}

// serveStoresHelp is the part of `walletsync serve --help` that says, store by store, which
// wires it serves and whether the view quotas apply. It is generated from serveStores and
// serveMounts so that it cannot say less, or more, than runServe does.
func serveStoresHelp(w io.Writer) {
	fmt.Fprintln(w, "\nStores (--db), and what each serves:")
	for _, st := range serveStores() {
		wires := []string{"the toolbox's JSON-RPC on POST /"}
		for _, m := range serveMounts(wire.ViewOptions{}, nil) {
			wires = append(wires, fmt.Sprintf("%s on %s (view quotas apply, %s)", strings.TrimSpace(m.Hello), m.Prefix, st.views))
		}
		fmt.Fprintf(w, "  %s: %s\n      %s\n", st.db, st.start, strings.Join(wires, "; "))
	}
}

// runServe is `walletsync serve`: a storage server until SIGINT or SIGTERM, then a graceful
// shutdown. Its first line on out says where it listens; logs go to stderr as JSON. Every
// store serves the toolbox's JSON-RPC and the wires of serveMounts.
func runServe(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("serve", "--listen ADDR --db sqlite:PATH|postgres://URL --key-file FILE [--chain test|main] [--tls-cert C --tls-key K] [--metrics-listen ADDR] [--max-views N] [--max-views-per-identity N] [--view-lifetime D] [--view-idle-timeout D] [--max-conns N] [--max-conns-per-addr N] [--read-timeout D] [--write-timeout D] [--idle-timeout D] [--quota-bytes N] [--quota-rows N] [--quota-sync-states N]", out)
	flagsHelp := fs.Usage
	fs.Usage = func() { flagsHelp(); serveStoresHelp(out) }
	listen := fs.String("listen", "", "the address to serve on, e.g. :8080 or 127.0.0.1:0")
	db := fs.String("db", "", "the store: sqlite:PATH or postgres://USER@HOST/DB (see Stores below)")
	keyFile := fs.String("key-file", "", "the server's identity key file (walletsync key create)")
	chain := fs.String("chain", "test", "the store's network: test or main; a store of another chain is refused")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM) ...")
	tlsKey := fs.String("tls-key", "", "... and this private key (PEM)")
	metricsListen := fs.String("metrics-listen", "", "serve /metrics, /healthz and /readyz on this address instead of --listen")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	var views wire.ViewOptions
	fs.IntVar(&views.MaxViews, "max-views", wire.DefaultMaxViews, "retained views of the paged wire open at once on the store")
	fs.IntVar(&views.MaxViewsPerIdentity, "max-views-per-identity", wire.DefaultMaxViewsPerIdentity, "retained views open at once per identity")
	fs.DurationVar(&views.DefaultLifetime, "view-lifetime", wire.DefaultViewLifetime, "how long a retained view lives when its client asks for no lifetime (at most 1h)")
	fs.DurationVar(&views.IdleTimeout, "view-idle-timeout", wire.DefaultViewIdleTimeout, "how long a retained view lives after the last request that used it, whatever its lifetime")
	var conns serve.ConnLimits
	fs.IntVar(&conns.MaxConns, "max-conns", serve.DefaultMaxConns, "client connections open at once; more are answered 503")
	fs.IntVar(&conns.MaxConnsPerAddr, "max-conns-per-addr", serve.DefaultMaxConnsPerAddr, "client connections open at once from one IP address")
	fs.DurationVar(&conns.ReadHeaderTimeout, "read-header-timeout", serve.DefaultReadHeaderTimeout, "time to read a request's headers")
	fs.DurationVar(&conns.ReadTimeout, "read-timeout", serve.DefaultReadTimeout, "time to read a whole request, its body included")
	fs.DurationVar(&conns.WriteTimeout, "write-timeout", serve.DefaultWriteTimeout, "time from a request's headers to the end of its answer")
	fs.DurationVar(&conns.IdleTimeout, "idle-timeout", serve.DefaultIdleTimeout, "how long a kept-alive connection waits for its next request")
	var quotas serve.Quotas
	fs.Int64Var(&quotas.MaxBytes, "quota-bytes", serve.DefaultQuotaBytes, "bytes of row data one identity may store (0: no bound)")
	fs.Int64Var(&quotas.MaxRows, "quota-rows", serve.DefaultQuotaRows, "rows one identity may store (0: no bound)")
	fs.Int64Var(&quotas.MaxSyncStates, "quota-sync-states", serve.DefaultQuotaSyncStates, "stores one identity may sync from: toolbox sync states and walletsync checkpoints (0: no bound)")
	memoryMiB := fs.Int64("memory-budget", wire.DefaultMemoryBudget>>20, fmt.Sprintf("MiB of request bodies and decompressed frames held at once (at least %d); a request past it waits 1s, then is answered 503 with Retry-After", (wire.MinMemoryBudget+1<<20-1)>>20))
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if *memoryMiB<<20 < wire.MinMemoryBudget || *memoryMiB > 1<<30 {
		return fmt.Errorf("%w: --memory-budget must be at least %d (MiB)", command.ErrUsage, (wire.MinMemoryBudget+1<<20-1)>>20)
	}
	if quotas.MaxBytes < 0 || quotas.MaxRows < 0 || quotas.MaxSyncStates < 0 {
		return fmt.Errorf("%w: --quota-bytes, --quota-rows and --quota-sync-states are at least 0 (0: no bound)", command.ErrUsage)
	}
	for _, q := range []*int64{&quotas.MaxBytes, &quotas.MaxRows, &quotas.MaxSyncStates} {
		if *q == 0 {
			*q = -1 // serve.Quotas: negative turns a bound off, zero takes the default
		}
	}
	if conns.MaxConns < 1 || conns.MaxConnsPerAddr < 1 || conns.ReadHeaderTimeout <= 0 || conns.ReadTimeout <= 0 || conns.WriteTimeout <= 0 || conns.IdleTimeout <= 0 {
		return fmt.Errorf("%w: --max-conns and --max-conns-per-addr must be at least 1, the timeouts positive", command.ErrUsage)
	}
	if views.MaxViews < 1 || views.MaxViewsPerIdentity < 1 || views.DefaultLifetime <= 0 || views.DefaultLifetime > wire.MaxViewLifetime || views.IdleTimeout <= 0 {
		return fmt.Errorf("%w: --max-views and --max-views-per-identity must be at least 1, --view-lifetime between 1ns and 1h, --view-idle-timeout positive", command.ErrUsage)
	}
	for _, f := range []struct{ name, value string }{{"listen", *listen}, {"db", *db}, {"key-file", *keyFile}} {
		if err := command.Required(f.name, f.value); err != nil {
			return err
		}
	}
	var pgURL string
	path, ok := strings.CutPrefix(*db, "sqlite:")
	switch {
	case strings.HasPrefix(*db, "postgres://") || strings.HasPrefix(*db, "postgresql://"):
		pgURL, path = *db, ""
	case !ok || path == "":
		return fmt.Errorf("%w: --db must be sqlite:PATH or postgres://URL", command.ErrUsage)
	}
	c, err := wallet.ParseChain(*chain)
	if err != nil || (c != wallet.ChainTest && c != wallet.ChainMain) {
		return fmt.Errorf("%w: --chain must be test or main", command.ErrUsage)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", command.ErrUsage)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level: %v", command.ErrUsage, err)
	}
	key, err := auth.LoadKeyFile(*keyFile)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	srv, err := serve.Open(ctx, serve.Options{
		DBPath: path, PostgresURL: pgURL, Chain: c, Signer: auth.NewProtoWallet(key), Listen: *listen, MetricsListen: *metricsListen,
		TLSCert: *tlsCert, TLSKey: *tlsKey, Logger: logger, Mounts: serveMounts(views, logger), Conns: conns, Quotas: quotas,
		MemoryBudget: *memoryMiB << 20,
	})
	if err != nil {
		return err
	}
	return srv.Run(ctx, func(at serve.Listening) {
		fmt.Fprintf(out, "walletsync serve: listening on %s (metrics %s/metrics), storage %s\n", at.URL, at.MetricsURL, srv.Settings().StorageIdentityKey)
	})
}
