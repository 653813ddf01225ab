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

	"walletsync/remote/auth"
	"walletsync/remote/toolbox"
	"walletsync/wallet"
)

// ServerProblem says, in a stable word, why a storage server did not pass the agent's check.
// The strings are a wire format (API error details, the dashboard's tests).
type ServerProblem string

// Server problems, in the order the check meets them.
const (
	ServerUnreachable  ServerProblem = "unreachable"   // nothing answers at the URL
	ServerNotToolbox   ServerProblem = "not-toolbox"   // something answers, not a toolbox StorageServer
	ServerBadKey       ServerProblem = "bad-key"       // the key file is not a key walletsync can sign with
	ServerSignerFailed ServerProblem = "signer"        // the BRC-100 wallet did not sign
	ServerRefused      ServerProblem = "refused"       // the server refused the authenticated makeAvailable
	ServerWrongChain   ServerProblem = "wrong-chain"   // the server keeps the other network's wallets
	ServerUnauthorized ServerProblem = "unauthorized"  // the signer is not one of the wallet's identities
	ServerOtherWallet  ServerProblem = "other-wallet"  // a restore of another identity into a wallet that has its own
	ServerNothingThere ServerProblem = "nothing-there" // the server holds no rows of the identity
)

// ServerCheckError is a storage server (or its signer) that did not pass the agent's check,
// said in words a person reads (Message, Hint); Err is the technical cause. It matches
// ErrServerCheck and its cause (wallet.ErrUnavailable, wallet.ErrWrongChain,
// wallet.ErrUnauthorized...).
type ServerCheckError struct {
	URL     string
	Problem ServerProblem
	Message string
	Hint    string
	Err     error
}

func (e *ServerCheckError) Error() string {
	return fmt.Sprintf("check storage server %s: %s: %v", e.URL, e.Problem, e.Err)
}

// Unwrap makes errors.Is true for ErrServerCheck and for the cause.
func (e *ServerCheckError) Unwrap() []error { return []error{ErrServerCheck, e.Err} }

// ServerSigner says who signs for a storage server, as the identity whose data it keeps.
// Exactly one field is set.
type ServerSigner struct {
	// KeyFile is a key file on this computer (64 hex digits and a newline, mode 0600): the
	// identity's root key. It is read once and kept in the agent's secrets, never in the
	// config.
	KeyFile string `json:"keyFile,omitempty"`
	// Key is a key file's content, as a page that cannot name a path sends it.
	Key Secret `json:"key,omitzero"`
	// WalletURL is the person's BRC-100 wallet (e.g. http://127.0.0.1:3321), which signs.
	WalletURL string `json:"walletURL,omitempty"`
	// Destination signs as a configured storage-server destination signs (its key in the
	// secrets, or its wallet).
	Destination string `json:"destination,omitempty"`
}

// ServerCheck is what the agent learned from a storage server that passed its check.
type ServerCheck struct {
	URL                string       `json:"url"`
	Banner             string       `json:"banner"`
	StorageIdentityKey string       `json:"storageIdentityKey"`
	StorageName        string       `json:"storageName"`
	Chain              wallet.Chain `json:"chain"`
	// IdentityKey is the signer's identity: the only one whose data the server gives out.
	IdentityKey string `json:"identityKey"`
}

// serverCheckTimeout bounds the whole check: a banner, a handshake and one call.
const serverCheckTimeout = 30 * time.Second

// signer resolves s: who signs, and the key to keep in the secrets when s names a key (nil
// for a wallet or a destination, whose signer is already where it belongs).
func (a *Agent) signer(rawURL string, s ServerSigner) (auth.Signer, *Secret, error) {
	set := 0
	for _, v := range []bool{s.KeyFile != "", !s.Key.IsZero(), s.WalletURL != "", s.Destination != ""} {
		if v {
			set++
		}
	}
	if set != 1 {
		return nil, nil, WithHint(fmt.Errorf("storage server signer: name one of a key file, a key, a wallet URL or a destination: %w", wallet.ErrInvalidArgument),
			"choose who signs: the identity's key file, or the BRC-100 wallet that holds the identity")
	}
	badKey := func(err error) error {
		return &ServerCheckError{URL: rawURL, Problem: ServerBadKey, Err: err,
			Message: fmt.Sprintf("That key file cannot sign: %v.", err),
			Hint:    "Choose the identity's key file: 64 hex digits and a newline, readable only by you (chmod 600)."}
	}
	switch {
	case s.KeyFile != "":
		key, err := auth.LoadKeyFile(s.KeyFile)
		if err != nil {
			return nil, nil, badKey(atPath(s.KeyFile, err))
		}
		sec := NewSecret(hex.EncodeToString(key.Serialize()))
		return auth.NewProtoWallet(key), &sec, nil
	case !s.Key.IsZero():
		key, err := auth.ParseKeyFile([]byte(strings.TrimSpace(s.Key.Reveal()) + "\n"))
		if err != nil {
			return nil, nil, badKey(err)
		}
		sec := NewSecret(hex.EncodeToString(key.Serialize()))
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
	if d.Kind != DestinationStorageServer {
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
func checkServer(ctx context.Context, rawURL string, signer auth.Signer, chain wallet.Chain, ids []string) (ServerCheck, error) {
	ctx, cancel := context.WithTimeout(ctx, serverCheckTimeout)
	defer cancel()
	fail := func(p ServerProblem, err error, message, hint string) (ServerCheck, error) {
		return ServerCheck{}, &ServerCheckError{URL: rawURL, Problem: p, Err: err, Message: message, Hint: hint}
	}
	if !httpURL(rawURL) {
		return fail(ServerUnreachable, wallet.ErrInvalidArgument, fmt.Sprintf("%q is not a storage server's address.", rawURL),
			"Give its http:// or https:// URL, such as https://storage.example.com.")
	}
	banner, err := toolbox.Banner(ctx, rawURL)
	switch {
	case errors.Is(err, toolbox.ErrNotStorageServer):
		return fail(ServerNotToolbox, err, fmt.Sprintf("Something answers at %s, but it is not a wallet-toolbox storage server.", rawURL),
			"Check the URL: a storage server answers its address with \"BRC-100 ... Storage Provider\".")
	case err != nil:
		return fail(ServerUnreachable, err, fmt.Sprintf("walletsync cannot reach %s: nothing answers there.", rawURL),
			"Check the URL, that the server is running, and that this computer is online.")
	}
	me, err := signer.IdentityKey(ctx)
	if err != nil {
		return fail(ServerSignerFailed, err, "The wallet that should sign for the server did not answer.",
			"Check that your BRC-100 wallet is running at the URL you gave, and allows walletsync.")
	}
	identity := string(auth.CounterpartyKey(me))
	// No retries: a person is waiting for the answer, and a server that is down says so now.
	client, err := toolbox.Dial(rawURL, signer, toolbox.ClientOptions{Retries: -1})
	if err != nil {
		return fail(ServerRefused, err, fmt.Sprintf("walletsync cannot talk to %s.", rawURL), "")
	}
	st, err := client.MakeAvailable(ctx)
	switch {
	case errors.Is(err, auth.ErrSigner):
		return fail(ServerSignerFailed, err, "The wallet that should sign for the server refused or failed to sign.",
			"Check that your BRC-100 wallet is running and allows walletsync.")
	case errors.Is(err, wallet.ErrUnavailable):
		return fail(ServerUnreachable, err, fmt.Sprintf("%s stopped answering when walletsync signed in.", rawURL),
			"Try again in a moment; if it keeps failing, check the server.")
	case err != nil:
		return fail(ServerRefused, err, fmt.Sprintf("%s did not accept walletsync's signed request.", rawURL),
			"Check that the URL is the storage server itself, not a page or a proxy in front of it.")
	}
	check := ServerCheck{URL: rawURL, Banner: banner, StorageIdentityKey: st.StorageIdentityKey, StorageName: st.StorageName, Chain: st.Chain, IdentityKey: identity}
	if chain != "" && st.Chain != chain {
		return fail(ServerWrongChain, fmt.Errorf("server on %s, wallet on %s: %w", st.Chain, chain, wallet.ErrWrongChain),
			fmt.Sprintf("The server keeps %s wallets, and your wallet is on the %s.", networkName(st.Chain), networkName(chain)),
			"Choose a storage server of your wallet's network.")
	}
	if ids != nil && !slices.Contains(ids, identity) {
		return fail(ServerUnauthorized, fmt.Errorf("the signer is %s, which the wallet does not hold (WERR_UNAUTHORIZED): %w", wallet.ShortKey(identity, 16), wallet.ErrUnauthorized),
			fmt.Sprintf("That key signs as identity %s, which is not one of your wallet's identities: the server would refuse to keep your wallet's data under it (WERR_UNAUTHORIZED).", wallet.ShortKey(identity, 16)),
			"A storage server keeps only the data of the identity that signs: choose your wallet's identity key, or the BRC-100 wallet that holds it.")
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
func (a *Agent) walletFacts(ctx context.Context, ref WalletRef) (wallet.Chain, []string, error) {
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

// ServerDestinationRequest is the body of POST /api/v1/storage-servers: a storage-server
// destination (Path its URL) and who signs for it.
type ServerDestinationRequest struct {
	Destination Destination  `json:"destination"`
	Signer      ServerSigner `json:"signer"`
}

// addServerDestination adds a storage-server destination once the server has passed the
// check (checkServer) for the wallet it backs up. A key the person named goes into the
// secrets (StorageKeySecret), never into the config; a BRC-100 wallet's URL goes into the
// config (Destination.WalletURL).
func (a *Agent) addServerDestination(ctx context.Context, req ServerDestinationRequest) (Config, error) {
	d := req.Destination
	if d.Kind != DestinationStorageServer {
		return Config{}, fmt.Errorf("destination %s: kind %q, want %q: %w", d.ID, d.Kind, DestinationStorageServer, wallet.ErrInvalidArgument)
	}
	if req.Signer.Destination != "" {
		return Config{}, fmt.Errorf("a new destination signs with a key or a wallet, not as another destination: %w", wallet.ErrInvalidArgument)
	}
	d.WalletURL = req.Signer.WalletURL
	// The config's own checks (id free, a URL, a schedule) come before any request.
	cfg := a.config()
	if _, err := findDestination(cfg, d.ID); err == nil {
		return Config{}, fmt.Errorf("destination %q exists: %w", d.ID, wallet.ErrInvalidArgument)
	}
	cfg.Destinations = append(slices.Clone(cfg.Destinations), d)
	if err := validateConfig(cfg); err != nil {
		return Config{}, err
	}
	signer, key, err := a.signer(d.Path, req.Signer)
	if err != nil {
		return Config{}, err
	}
	if err := a.checkServerFor(ctx, cfg, d, signer); err != nil {
		return Config{}, err
	}
	if key != nil {
		if err := a.secrets.Set(StorageKeySecret(d.ID), *key); err != nil {
			return Config{}, fmt.Errorf("keep the storage server's key: %w", err)
		}
	}
	out, err := a.addDestination(d)
	if err != nil && key != nil {
		a.secrets.Delete(StorageKeySecret(d.ID)) // the destination it was for was not added
	}
	return out, err
}

// updateServerDestination saves an edit of the storage-server destination id. A new URL or
// signing wallet is checked first (checkServer, signed as the edited destination signs);
// an edit that keeps both (a name, a schedule) is saved without asking the server, so that
// a server that is down does not stop a rename.
func (a *Agent) updateServerDestination(ctx context.Context, id string, d Destination) (Config, error) {
	cfg := a.config()
	old, err := findDestination(cfg, id)
	if err != nil {
		return Config{}, err
	}
	if old.Kind != DestinationStorageServer || d.Kind != DestinationStorageServer {
		return Config{}, fmt.Errorf("destination %s: a storage server stays a storage server: %w", id, wallet.ErrInvalidArgument)
	}
	d.ID = id
	if d.Path != old.Path || d.WalletURL != old.WalletURL {
		i := slices.IndexFunc(cfg.Destinations, func(x Destination) bool { return x.ID == id })
		cfg.Destinations = slices.Clone(cfg.Destinations)
		cfg.Destinations[i] = d
		if err := validateConfig(cfg); err != nil {
			return Config{}, err
		}
		signer, err := a.storageSigner(d)
		if err != nil {
			return Config{}, err
		}
		if err := a.checkServerFor(ctx, cfg, d, signer); err != nil {
			return Config{}, err
		}
	}
	return a.updateDestination(id, func(x *Destination) { *x = d })
}

// checkServerFor runs checkServer for d, which cfg holds, signed by signer, against the
// chain and identities of the wallet d backs up.
func (a *Agent) checkServerFor(ctx context.Context, cfg Config, d Destination, signer auth.Signer) error {
	ref, err := walletOf(cfg, d)
	if err != nil {
		return err
	}
	chain, ids, err := a.walletFacts(ctx, ref)
	if err != nil {
		return atPath(ref.Path, err)
	}
	_, err = checkServer(ctx, d.Path, signer, chain, ids)
	return err
}

// ServerPushResult is the result of a push to a storage server.
type ServerPushResult struct {
	SyncResult
	// ConfirmedAt is when the server acknowledged the push's final processSyncChunk (the
	// chunk that completed the sync): from then on it holds the wallet as it was. Zero
	// when the push did not complete.
	ConfirmedAt time.Time `json:"confirmedAt,omitzero"`
}

// confirmedAt reads a storage-server push task's ConfirmedAt; zero when it has none.
func confirmedAt(t Task) time.Time {
	var r ServerPushResult
	if len(t.Result) == 0 || json.Unmarshal(t.Result, &r) != nil {
		return time.Time{}
	}
	return r.ConfirmedAt
}

// storageServerRoutes serves the storage-server routes (see the Route constants).
func (a *Agent) storageServerRoutes() {
	for route, h := range map[Route]HandlerFunc{
		RouteServerDestinationAdd: withBody(func(r *http.Request, req ServerDestinationRequest) (any, error) {
			return a.addServerDestination(r.Context(), req)
		}),
		RouteServerDestinationPut: withBody(func(r *http.Request, d Destination) (any, error) {
			return a.updateServerDestination(r.Context(), r.PathValue("id"), d)
		}),
		RouteServerRestorePreview: withBody(func(_ *http.Request, req ServerRestoreRequest) (any, error) {
			return a.previewServerRestore(req)
		}),
		RouteServerRestore: withBody(func(_ *http.Request, req ServerRestoreRequest) (any, error) {
			return a.restoreFromServer(req)
		}),
	} {
		a.srv.Handle(route, h)
	}
}
