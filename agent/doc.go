// Package agent is walletsync's daemon infrastructure: the event bus, the task manager,
// the agent's own state database, the config and secrets files, the loopback HTTP API and
// the platform service wrapper.
//
// The jobs themselves (sync, file backup, restore drill), their schedules and the command
// line are built on top of these blocks; nothing here knows what a job does. The blocks
// connect like this:
//
//	dir := agent.DataDir(path)                  // or agent.DefaultDataDir()
//	lock, err := dir.Lock()                     // one agent per data folder: *AgentRunningError
//	state, err := agent.OpenState(ctx, dir.StatePath())
//	bus := agent.NewBus(0)
//	go state.RecordEvents(context.Background(), bus, 0) // the bounded event log; ends at bus.Close
//	secrets := agent.NewSecrets(dir.SecretsPath())
//	tasks, err := agent.NewManager(ctx, agent.ManagerOptions{Bus: bus, State: state, Redactor: secrets})
//	token, err := dir.Token()
//	srv, err := agent.NewServer(agent.ServerOptions{Token: token, Bus: bus, Tasks: tasks, Secrets: secrets})
//	err = dir.PublishAddr(srv.Addr())           // so that the command line finds the agent
//	fmt.Println("dashboard:", srv.LoginURL())
//	go srv.Serve(serveCtx)
//
// and stop in this order, so that the last task events reach the event log: cancel
// serveCtx (Serve ends the event streams and returns), tasks.Shutdown (running jobs stop
// at a safe point and are recorded as interrupted), bus.Close (RecordEvents drains the
// ring and returns), state.Close, dir.RemoveAddr, lock.Release. RunService runs the
// program that does all this, cancelling its context on SIGINT and SIGTERM.
//
// Secrets (the unattended backup password) travel as Secret values, which format, marshal
// and log as "[redacted]"; the manager and the server also scrub every text they publish
// of the stored secret values. Nothing but Secrets.Get returns a secret.
package agent
