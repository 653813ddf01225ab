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

// runServe is `walletsync serve`: a storage server until SIGINT or SIGTERM, then a graceful
// shutdown. Its first line on out says where it listens; logs go to stderr as JSON. On
// SQLite it serves the toolbox wire and walletsync's paged wire; on PostgreSQL the toolbox
// wire only, so that wire.Detect finds no paged wire there and clients use the toolbox's.
func runServe(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("serve", "--listen ADDR --db sqlite:PATH|postgres://URL --key-file FILE [--chain test|main] [--tls-cert C --tls-key K] [--metrics-listen ADDR] [--max-views N] [--max-views-per-identity N] [--view-lifetime D]", out)
	listen := fs.String("listen", "", "the address to serve on, e.g. :8080 or 127.0.0.1:0")
	db := fs.String("db", "", "the store: sqlite:PATH (created on the first start), or postgres://USER@HOST/DB (migrated on the first start; several servers may share it; toolbox wire only: the paged wire is not available on PostgreSQL yet, clients fall back to the toolbox wire)")
	keyFile := fs.String("key-file", "", "the server's identity key file (walletsync key create)")
	chain := fs.String("chain", "test", "the store's network: test or main; a store of another chain is refused")
	tlsCert := fs.String("tls-cert", "", "serve HTTPS with this certificate (PEM) ...")
	tlsKey := fs.String("tls-key", "", "... and this private key (PEM)")
	metricsListen := fs.String("metrics-listen", "", "serve /metrics, /healthz and /readyz on this address instead of --listen")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	var views wire.ViewOptions
	fs.IntVar(&views.MaxViews, "max-views", wire.DefaultMaxViews, "retained views of the paged wire open at once on the server (SQLite only)")
	fs.IntVar(&views.MaxViewsPerIdentity, "max-views-per-identity", wire.DefaultMaxViewsPerIdentity, "retained views open at once per identity (SQLite only)")
	fs.DurationVar(&views.DefaultLifetime, "view-lifetime", wire.DefaultViewLifetime, "how long a retained view lives when its client asks for no lifetime (at most 1h; SQLite only)")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if views.MaxViews < 1 || views.MaxViewsPerIdentity < 1 || views.DefaultLifetime <= 0 || views.DefaultLifetime > wire.MaxViewLifetime {
		return fmt.Errorf("%w: --max-views and --max-views-per-identity must be at least 1, --view-lifetime between 1ns and 1h", command.ErrUsage)
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
	mounts := []serve.Mount{serve.WireMount(views, logger)}
	srv, err := serve.Open(ctx, serve.Options{
		DBPath: path, PostgresURL: pgURL, Chain: c, Signer: auth.NewProtoWallet(key), Listen: *listen, MetricsListen: *metricsListen,
		TLSCert: *tlsCert, TLSKey: *tlsKey, Logger: logger, Mounts: mounts,
	})
	if err != nil {
		return err
	}
	return srv.Run(ctx, func(at serve.Listening) {
		fmt.Fprintf(out, "walletsync serve: listening on %s (metrics %s/metrics), storage %s\n", at.URL, at.MetricsURL, srv.Settings().StorageIdentityKey)
	})
}
