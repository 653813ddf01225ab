package agent

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"walletsync/agent/api"

	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/wallet"
)

// serverCheckTimeout bounds the whole check: a banner, a handshake and one call.
const serverCheckTimeout = 30 * time.Second

// signer resolves s: who signs, and the key to keep in the secrets when s names a key (nil
// for a wallet or a destination, whose signer is already where it belongs).
func (a *Agent) signer(rawURL string, s api.ServerSigner) (auth.Signer, *api.Secret, error) {
	set := 0
	for _, v := range []bool{s.KeyFile != "", !s.Key.IsZero(), s.WalletURL != "", s.Destination != ""} {
		if v {
			set++
		}
	}
	if set != 1 {
		return nil, nil, api.WithHint(fmt.Errorf("storage server signer: name one of a key file, a key, a wallet URL or a destination: %w", wallet.ErrInvalidArgument),
			"choose who signs: the identity's key file, or the BRC-100 wallet that holds the identity")
	}
	badKey := func(err error) error {
		return &api.ServerCheckError{URL: rawURL, Problem: api.ServerBadKey, Err: err,
			Message: fmt.Sprintf("That key file cannot sign: %v.", err),
			Hint:    "Choose the identity's key file: 64 hex digits and a newline, readable only by you (chmod 600)."}
	}
	switch {
	case s.KeyFile != "":
		key, err := auth.LoadKeyFile(s.KeyFile)
		if err != nil {
			return nil, nil, badKey(api.AtPath(s.KeyFile, err))
		}
		sec := api.NewSecret(hex.EncodeToString(key.Serialize()))
		return auth.NewProtoWallet(key), &sec, nil
	case !s.Key.IsZero():
		key, err := auth.ParseKeyFile([]byte(strings.TrimSpace(s.Key.Reveal()) + "\n"))
		if err != nil {
			return nil, nil, badKey(err)
		}
		sec := api.NewSecret(hex.EncodeToString(key.Serialize()))
		return auth.NewProtoWallet(key), &sec, nil
	case s.WalletURL != "":
		w, err := auth.NewHTTPWallet(s.WalletURL, auth.HTTPWalletOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("storage server signer: %v: %w", err, wallet.ErrInvalidArgument)
		}
		return w, nil, nil
	}
	d, err := findDestination(a.config(), s.Destination)
	if err != nil {
		return nil, nil, err
	}
	if d.Kind != api.DestinationStorageServer {
		return nil, nil, fmt.Errorf("destination %s is a %s, not a storage server: %w", d.ID, d.Kind, wallet.ErrInvalidArgument)
	}
	signer, err := a.storageSigner(d)
	return signer, nil, err
}

// checkServer asks the storage server at rawURL, as signer, whether it will keep the wallet
// of chain whose identities are ids: an unauthenticated GET / (is anything there, and is it
// a toolbox StorageServer), then an authenticated makeAvailable (does it accept the
// signature; which network). With ids set, the signer must be one of them: the server
// keeps and gives out only the signing identity's data, and refuses any other
// (WERR_UNAUTHORIZED), so this is checked here, before anything is written anywhere. An
// empty chain skips the network check. Failures are *ServerCheckError.
func checkServer(ctx context.Context, rawURL string, signer auth.Signer, chain wallet.Chain, ids []string) (api.ServerCheck, error) {
	ctx, cancel := context.WithTimeout(ctx, serverCheckTimeout)
	defer cancel()
	fail := func(p api.ServerProblem, err error, message, hint string) (api.ServerCheck, error) {
		return api.ServerCheck{}, &api.ServerCheckError{URL: rawURL, Problem: p, Err: err, Message: message, Hint: hint}
	}
	if !httpURL(rawURL) {
		return fail(api.ServerUnreachable, wallet.ErrInvalidArgument, fmt.Sprintf("%q is not a storage server's address.", rawURL),
			"Give its http:// or https:// URL, such as https://storage.example.com.")
	}
	banner, err := toolbox.Banner(ctx, rawURL)
	switch {
	case errors.Is(err, toolbox.ErrNotStorageServer):
		return fail(api.ServerNotToolbox, err, fmt.Sprintf("Something answers at %s, but it is not a wallet-toolbox storage server.", rawURL),
			"Check the URL: a storage server answers its address with \"BRC-100 ... Storage Provider\".")
	case err != nil:
		return fail(api.ServerUnreachable, err, fmt.Sprintf("walletsync cannot reach %s: nothing answers there.", rawURL),
			"Check the URL, that the server is running, and that this computer is online.")
	}
	me, err := signer.IdentityKey(ctx)
	if err != nil {
		return fail(api.ServerSignerFailed, err, "The wallet that should sign for the server did not answer.",
			"Check that your BRC-100 wallet is running at the URL you gave, and allows walletsync.")
	}
	identity := string(auth.CounterpartyKey(me))
	// Before any signed request: a toolbox server makes a user for whoever signs its first
	// call (validateParam0's findOrInsertUser), and a refused key must leave none behind.
	if ids != nil && !slices.Contains(ids, identity) {
		return fail(api.ServerUnauthorized, fmt.Errorf("the signer is %s, which the wallet does not hold (WERR_UNAUTHORIZED): %w", wallet.ShortKey(identity, 16), wallet.ErrUnauthorized),
			fmt.Sprintf("That key signs as identity %s, which is not one of your wallet's identities: the server would refuse to keep your wallet's data under it (WERR_UNAUTHORIZED).", wallet.ShortKey(identity, 16)),
			"A storage server keeps only the data of the identity that signs: choose your wallet's identity key, or the BRC-100 wallet that holds it.")
	}
	// No retries: a person is waiting for the answer, and a server that is down says so now.
	client, err := toolbox.Dial(rawURL, signer, toolbox.ClientOptions{Retries: -1})
	if err != nil {
		return fail(api.ServerRefused, err, fmt.Sprintf("walletsync cannot talk to %s.", rawURL), "")
	}
	st, err := client.MakeAvailable(ctx)
	switch {
	case errors.Is(err, auth.ErrSigner):
		return fail(api.ServerSignerFailed, err, "The wallet that should sign for the server refused or failed to sign.",
			"Check that your BRC-100 wallet is running and allows walletsync.")
	case errors.Is(err, wallet.ErrUnavailable):
		return fail(api.ServerUnreachable, err, fmt.Sprintf("%s stopped answering when walletsync signed in.", rawURL),
			"Try again in a moment; if it keeps failing, check the server.")
	case err != nil:
		return fail(api.ServerRefused, err, fmt.Sprintf("%s did not accept walletsync's signed request.", rawURL),
			"Check that the URL is the storage server itself, not a page or a proxy in front of it.")
	}
	check := api.ServerCheck{URL: rawURL, Banner: banner, StorageIdentityKey: st.StorageIdentityKey, StorageName: st.StorageName, Chain: st.Chain, IdentityKey: identity}
	if chain != "" && st.Chain != chain {
		return fail(api.ServerWrongChain, fmt.Errorf("server on %s, wallet on %s: %w", st.Chain, chain, wallet.ErrWrongChain),
			fmt.Sprintf("The server keeps %s wallets, and your wallet is on the %s.", networkName(st.Chain), networkName(chain)),
			"Choose a storage server of your wallet's network.")
	}
	return check, nil
}

// networkName is a chain as a person says it.
func networkName(c wallet.Chain) string {
	if c == wallet.ChainMain {
		return "main network"
	}
	return "test network"
}

// walletFacts returns the chain and identities of the wallet destination d backs up.
func (a *Agent) walletFacts(ctx context.Context, ref api.WalletRef) (wallet.Chain, []string, error) {
	var chain wallet.Chain
	var ids []string
	err := a.foreground(ctx, ref.Path, func(w *walletHandle) error {
		st, err := w.store.Settings(ctx)
		if err != nil {
			return err
		}
		chain = st.Chain
		ids, err = w.identities(ctx, ref)
		return err
	})
	return chain, ids, err
}

// addServerDestination adds a storage-server destination once the server has passed the
// check (checkServer) for the wallet it backs up. A key the person named goes into the
// secrets (storageKeySecret), never into the config; a BRC-100 wallet's URL goes into the
// config (Destination.WalletURL).
func (a *Agent) addServerDestination(ctx context.Context, req api.ServerDestinationRequest) (api.Config, error) {
	d := req.Destination
	if d.Kind != api.DestinationStorageServer {
		return api.Config{}, fmt.Errorf("destination %s: kind %q, want %q: %w", d.ID, d.Kind, api.DestinationStorageServer, wallet.ErrInvalidArgument)
	}
	if req.Signer.Destination != "" {
		return api.Config{}, fmt.Errorf("a new destination signs with a key or a wallet, not as another destination: %w", wallet.ErrInvalidArgument)
	}
	d.WalletURL = req.Signer.WalletURL
	// The config's own checks (id free, a URL, a schedule) come before any request.
	cfg := a.config()
	if _, err := findDestination(cfg, d.ID); err == nil {
		return api.Config{}, fmt.Errorf("destination %q exists: %w", d.ID, wallet.ErrInvalidArgument)
	}
	cfg.Destinations = append(slices.Clone(cfg.Destinations), d)
	if err := validateConfig(cfg); err != nil {
		return api.Config{}, err
	}
	signer, key, err := a.signer(d.Path, req.Signer)
	if err != nil {
		return api.Config{}, err
	}
	if err := a.checkServerFor(ctx, cfg, d, signer); err != nil {
		return api.Config{}, err
	}
	if key != nil {
		if err := a.secrets.Set(storageKeySecret(d.ID), *key); err != nil {
			return api.Config{}, fmt.Errorf("keep the storage server's key: %w", err)
		}
	}
	out, err := a.addDestination(d)
	if err != nil && key != nil {
		// The destination it was for was not added: a key left behind would be found by a
		// later destination of the same id.
		if derr := a.secrets.Delete(storageKeySecret(d.ID)); derr != nil {
			err = errors.Join(err, fmt.Errorf("forget the storage server's key: %w", derr))
		}
	}
	return out, err
}

// updateServerDestination saves an edit of the storage-server destination id. A new URL or
// signing wallet is checked first (checkServer, signed as the edited destination signs);
// an edit that keeps both (a name, a schedule) is saved without asking the server, so that
// a server that is down does not stop a rename.
func (a *Agent) updateServerDestination(ctx context.Context, id string, d api.Destination) (api.Config, error) {
	cfg := a.config()
	old, err := findDestination(cfg, id)
	if err != nil {
		return api.Config{}, err
	}
	if old.Kind != api.DestinationStorageServer || d.Kind != api.DestinationStorageServer {
		return api.Config{}, fmt.Errorf("destination %s: a storage server stays a storage server: %w", id, wallet.ErrInvalidArgument)
	}
	d.ID = id
	if d.Path != old.Path || d.WalletURL != old.WalletURL {
		i := slices.IndexFunc(cfg.Destinations, func(x api.Destination) bool { return x.ID == id })
		cfg.Destinations = slices.Clone(cfg.Destinations)
		cfg.Destinations[i] = d
		if err := validateConfig(cfg); err != nil {
			return api.Config{}, err
		}
		signer, err := a.storageSigner(d)
		if err != nil {
			return api.Config{}, err
		}
		if err := a.checkServerFor(ctx, cfg, d, signer); err != nil {
			return api.Config{}, err
		}
	}
	return a.updateDestination(id, func(x *api.Destination) { *x = d })
}

// checkServerFor runs checkServer for d, which cfg holds, signed by signer, against the
// chain and identities of the wallet d backs up.
func (a *Agent) checkServerFor(ctx context.Context, cfg api.Config, d api.Destination, signer auth.Signer) error {
	ref, err := walletOf(cfg, d)
	if err != nil {
		return err
	}
	chain, ids, err := a.walletFacts(ctx, ref)
	if err != nil {
		return api.AtPath(ref.Path, err)
	}
	_, err = checkServer(ctx, d.Path, signer, chain, ids)
	return err
}

// confirmedAt reads a storage-server push task's ConfirmedAt; zero when it has none.
func confirmedAt(t api.Task) time.Time {
	var r api.ServerPushResult
	if len(t.Result) == 0 || json.Unmarshal(t.Result, &r) != nil {
		return time.Time{}
	}
	return r.ConfirmedAt
}

// storageServerRoutes serves the storage-server routes (see the Route constants).
func (a *Agent) storageServerRoutes() {
	for route, h := range map[api.Route]api.HandlerFunc{
		api.RouteServerDestinationAdd: api.WithBody(func(r *http.Request, req api.ServerDestinationRequest) (any, error) {
			return a.addServerDestination(r.Context(), req)
		}),
		api.RouteServerDestinationPut: api.WithBody(func(r *http.Request, d api.Destination) (any, error) {
			return a.updateServerDestination(r.Context(), r.PathValue("id"), d)
		}),
		api.RouteServerRestorePreview: api.WithBody(func(_ *http.Request, req api.ServerRestoreRequest) (any, error) {
			return a.previewServerRestore(req)
		}),
		api.RouteServerRestore: api.WithBody(func(_ *http.Request, req api.ServerRestoreRequest) (any, error) {
			return a.restoreFromServer(req)
		}),
	} {
		a.srv.Handle(route, h)
	}
}
