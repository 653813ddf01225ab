package agent

import (
	"errors"
	"fmt"
	"time"
	"walletsync/agent/api"
)

// AgentRunningError names the process that holds a data folder's lock.
type AgentRunningError struct {
	Dir string // the data folder
	PID int    // the holder's process id, 0 when the lock file names none
}

func (e *AgentRunningError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s: %v", e.Dir, api.ErrAgentRunning)
	}
	return fmt.Sprintf("%s: %v (pid %d)", e.Dir, api.ErrAgentRunning, e.PID)
}

// Unwrap makes errors.Is(err, ErrAgentRunning) true.
func (e *AgentRunningError) Unwrap() error { return api.ErrAgentRunning }

// ErrPlaceRefused is what a destination's run returns, wrapped in a PlaceError, when the
// path it names breaks, as the path resolves at that run, a rule its place must keep.
var ErrPlaceRefused = errors.New("destination place refused")

// PlaceError says which destination's run was refused, at which path (as it resolved),
// and why, in words; the run opened nothing for writing. It unwraps to ErrPlaceRefused.
type PlaceError struct {
	Destination string // the destination's name
	Path        string // the path as it resolved at the run
	Reason      string // the rule it breaks, in words
}

func (e *PlaceError) Error() string {
	return fmt.Sprintf("destination %s: %s: %v", e.Destination, e.Reason, ErrPlaceRefused)
}

// Unwrap makes errors.Is(err, ErrPlaceRefused) true.
func (e *PlaceError) Unwrap() error { return ErrPlaceRefused }

// ErrPlaceMissing is what a destination's run returns, wrapped in a MissingPlaceError, when
// the folder (or the backup wallet file) it wrote to before is not there now.
var ErrPlaceMissing = errors.New("the place written before is not there")

// MissingPlaceError says that the folder, or the backup wallet file, that destination
// Destination wrote to before is not there now: an external disk unplugged (its mount
// point left empty, or gone), a folder renamed away. The run created nothing and wrote
// nothing; the next run proceeds once the place is back. It unwraps to ErrPlaceMissing.
type MissingPlaceError struct {
	Destination string    // the destination's name
	What        string    // "folder" or "backup wallet file"
	Path        string    // the folder or file that is not there
	Since       time.Time // when a run first wrote there
}

func (e *MissingPlaceError) Error() string {
	return fmt.Sprintf("destination %s: the %s %s is not there: is the disk connected? walletsync has written there since %s and does not create it again",
		e.Destination, e.What, e.Path, e.Since.UTC().Format("2006-01-02 15:04 UTC"))
}

// Unwrap makes errors.Is(err, ErrPlaceMissing) true.
func (e *MissingPlaceError) Unwrap() error { return ErrPlaceMissing }
