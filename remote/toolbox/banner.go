package toolbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"walletsync/wallet"
)

// ErrNotStorageServer: what answers at a URL is not a @bsv/wallet-toolbox StorageServer
// (its unauthenticated GET / is not the server's banner).
var ErrNotStorageServer = errors.New("not a toolbox storage server")

// bannerTimeout bounds the banner's request: one short GET, answered at once by a server
// that is up.
const bannerTimeout = 10 * time.Second

// Banner asks baseURL, without authenticating, for the StorageServer's banner: its GET /
// answers "BRC-100 ... Storage Provider ..." with HTTP 200. It returns the banner's first
// line, an error matching wallet.ErrUnavailable when nothing answers at baseURL (refused,
// unknown host, timeout), or one matching ErrNotStorageServer when something else answers.
// It costs one request and sends nothing a server could mistake for a call.
func Banner(ctx context.Context, baseURL string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bannerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/", nil)
	if err != nil {
		return "", fmt.Errorf("ask %s for its banner: %v: %w", baseURL, err, wallet.ErrInvalidArgument)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask %s for its banner: %w: %w", baseURL, wallet.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	first, _, _ := strings.Cut(string(b), "\n")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(first, "BRC-100 ") || !strings.Contains(first, "Storage Provider") {
		return "", fmt.Errorf("%s answers GET / with HTTP %d %.80q: %w", baseURL, resp.StatusCode, first, ErrNotStorageServer)
	}
	return first, nil
}
