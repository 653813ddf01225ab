package agent

import (
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
