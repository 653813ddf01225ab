package agent

import (
	"errors"
	"fmt"
	"strings"

	"walletsync/wallet"
)

// isAPIFallthrough reports a request under /api/ that only a catch-all pattern (the
// dashboard's "GET /") matched: an unknown API path, which must answer a JSON error like
// every other route instead of the dashboard's page.
func isAPIFallthrough(path, pattern string) bool {
	return strings.HasPrefix(path, "/api/") && !strings.Contains(pattern, "/api/")
}

// invalidBody classifies a request body the JSON decoder refused as wallet.ErrInvalidArgument,
// once: a field's own decoder (a Duration, a Secret) may have classified it already, and
// "invalid argument: invalid argument" tells a person nothing twice.
func invalidBody(err error) error {
	if errors.Is(err, wallet.ErrInvalidArgument) {
		return fmt.Errorf("decode request body: %w", err)
	}
	return fmt.Errorf("decode request body: %v: %w", err, wallet.ErrInvalidArgument)
}
