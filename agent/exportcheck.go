package agent

import (
	"fmt"
	"walletsync/agent/api"

	"walletsync/portable"
	"walletsync/wallet"
)

// exportOptions are the options of every file the agent exports: never written into the
// agent's data folder (its token, secrets, state and staging files live there), and
// replacing an existing file only when the person asked, and only a backup file
// (portable.CheckExportPath).
func (a *Agent) exportOptions(overwrite bool) portable.ExportOptions {
	return portable.ExportOptions{Overwrite: overwrite, Protected: []string{string(a.opts.Dir)}, KDFGate: a.deriveGate}
}

// checkExport refuses an export request before a task starts, as the command line refuses
// before it asks for the password: a missing path, a password shorter than
// api.MinPasswordLength (the rule the dashboard and the command line apply too), a path the
// export may not write.
func (a *Agent) checkExport(req api.ExportRequest) error {
	switch {
	case req.Path == "":
		return fmt.Errorf("export needs the path of the file to write: %w", wallet.ErrInvalidArgument)
	}
	if err := api.CheckNewPassword(req.Password.Reveal()); err != nil {
		return fmt.Errorf("export %s: %w", req.Path, err)
	}
	_, err := portable.CheckExportPath(req.Path, a.exportOptions(req.Overwrite))
	return err
}
