package auth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestServer_NonceBudget: used nonces are bounded in bytes per session and in total. A
// session of long nonces ends at its byte bound (its client hand-shakes again), and past
// the server's budget the least recently used other session ends: the charge never passes
// either bound, and the newest session keeps working.
func TestServer_NonceBudget(t *testing.T) {
	long := strings.Repeat("N", maxRequestNonce)
	for _, tc := range []struct {
		name     string
		budget   int64
		sessions int
		// perSession nonces are claimed in each session in turn; wantRefusedAt is the
		// claim (counted over all) that is refused first, 0 for none.
		perSession    int
		wantRefusedAt int
	}{
		{"one session stops at its byte bound", 1 << 30, 1, maxSeen, int(maxSeenBytes/nonceCharge(long)) + 1},
		{"the oldest session ends past the total", 40 * nonceCharge(long), 3, 20, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := NewServer(t.Context(), NewProtoWallet(randKey(rand.New(rand.NewPCG(51, 52)))), ServerOptions{MaxNonceBytes: tc.budget})
			if err != nil {
				t.Fatal(err)
			}
			refusedAt := 0
			n := 0
			for i := range tc.sessions {
				key := fmt.Sprintf("session-%d", i)
				srv.store(key, &serverSession{clientKey: "k"})
				for j := range tc.perSession {
					n++
					nonce := fmt.Sprintf("%d-%d-%s", i, j, long)[:maxRequestNonce]
					if !srv.claim(key, nonce) && refusedAt == 0 {
						refusedAt = n
					}
					if srv.nonceBytes > tc.budget {
						t.Fatalf("claim %d: %d bytes of nonces kept, over the %d-byte budget", n, srv.nonceBytes, tc.budget)
					}
				}
			}
			if refusedAt != tc.wantRefusedAt {
				t.Fatalf("first refusal at claim %d, want %d", refusedAt, tc.wantRefusedAt)
			}
			newest := fmt.Sprintf("session-%d", tc.sessions-1)
			if tc.wantRefusedAt == 0 && (srv.sessions[newest] == nil || srv.sessions["session-0"] != nil) {
				t.Fatalf("sessions left %v: want the newest kept and the oldest ended", len(srv.sessions))
			}
		})
	}
}
