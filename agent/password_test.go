package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"walletsync/agent/api"

	"walletsync/localstore"
	"walletsync/wallet"
)

// folderState is every name, size and modification time in dir: what a test that
// promises to write nothing compares before and after.
func folderState(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %v %d", e.Name(), fi.ModTime(), fi.Size()))
	}
	return out
}

// TestAgent_TestPassword: "test my password" refuses an empty password and a folder with
// no backup yet, says a wrong password does not open the newest file and a right one
// does, writes nothing into the backup folder, and notes when the unattended password was
// proven, which the drill reports until the password changes.
func TestAgent_TestPassword(t *testing.T) {
	e := newAgentEnv(t, localstore.FixtureSmall)
	held := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	e.opts.Clock = func() time.Time { return held }
	a := launchAgent(t, e.opts)
	c := apiClient(t, e.opts.Dir)
	ctx := waitCtx(t)
	if _, err := c.TestPassword(ctx, api.NewSecret(testPassword)); !isNotFound(err) {
		t.Fatalf("before any backup: %v, want not found", err)
	}
	if task := runAndWait(t, c, a, api.RouteRun, "folder"); task.State != api.TaskSucceeded {
		t.Fatalf("backup: %+v", task)
	}
	before := folderState(t, e.folder)
	tests := []struct {
		name       string
		password   string
		opens      bool
		unattended bool
		message    string
		errCode    string
	}{
		{"empty", "", false, false, "", "invalid_argument"},
		{"wrong", "not the password", false, false, "That password does not open ", ""},
		{"right", testPassword, true, true, "Your password opens ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.TestPassword(ctx, api.NewSecret(tt.password))
			if tt.errCode != "" {
				var ae *api.APIError
				if !errors.As(err, &ae) || ae.Code != tt.errCode {
					t.Fatalf("error %v, want %s", err, tt.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Opens != tt.opens || res.Unattended != tt.unattended || !strings.HasPrefix(res.Message, tt.message) || res.Destination != "folder" {
				t.Fatalf("result %+v", res)
			}
			if tt.opens != !res.Proven.IsZero() || tt.opens && !res.Proven.Equal(held) {
				t.Fatalf("proven %v after %s", res.Proven, tt.name)
			}
		})
	}
	if after := folderState(t, e.folder); !slices.Equal(before, after) {
		t.Fatalf("the backup folder changed: %v -> %v", before, after)
	}

	drill := runAndWait(t, c, a, api.RouteDrill)
	var res api.DrillResult
	if err := jsonUnmarshal(drill.Result, &res); err != nil || !res.PasswordProven.Equal(held) {
		t.Fatalf("drill result %s (%v): want the password proven at %v", drill.Result, err, held)
	}
	if err := a.secrets.Set(BackupPasswordKey, api.NewSecret("a new password, not proven")); err != nil {
		t.Fatal(err)
	}
	if proven, err := a.passwordProven(context.Background()); err != nil || !proven.IsZero() {
		t.Fatalf("after a new password: proven %v, %v; want never", proven, err)
	}
}

func isNotFound(err error) bool {
	var ae *api.APIError
	return errors.As(err, &ae) && ae.Code == "not_found" || errors.Is(err, wallet.ErrNotFound)
}
