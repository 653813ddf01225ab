package agent

import (
	"errors"
	"fmt"
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
