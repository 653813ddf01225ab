package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"

	"walletsync/cli/command"
)

// runOpen asks the running agent for a fresh one-time login link, prints it, and opens it
// in the person's browser: the way back in once the first link is used or the browser has
// forgotten its cookie. With --forget-browsers it first signs every browser out (a cookie
// copied off this machine, a browser given away), so that only the new link signs one in.
func runOpen(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("open", "[--data-dir D] [--print-only] [--forget-browsers]", out)
	af := addAgentFlags(fs)
	printOnly := fs.Bool("print-only", false, "print the link without opening a browser")
	forget := fs.Bool("forget-browsers", false, "first sign every browser out of the agent (browsers stay signed in for 30 days otherwise)")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	c, err := af.client()
	if err != nil {
		return err
	}
	if *forget {
		if err := c.ForgetBrowsers(ctx); err != nil {
			return err
		}
		fmt.Fprintln(out, "every browser is signed out of the agent; the link below signs one in again")
	}
	url, err := c.LoginURL(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dashboard: %s\n(the link works once, within two minutes; the browser then stays signed in for 30 days)\n", url)
	if *printOnly {
		return nil
	}
	if err := openBrowser(ctx, url); err != nil {
		return fmt.Errorf("open the browser (open the link above by hand): %w", err)
	}
	return nil
}

// openBrowser starts the person's browser on url: $BROWSER when set (the convention
// xdg-open follows too, and how tests watch what would open), else the platform's opener.
// It waits only for the opener, not for the browser.
func openBrowser(ctx context.Context, url string) error {
	name, args := "xdg-open", []string{url}
	switch {
	case os.Getenv("BROWSER") != "":
		name = os.Getenv("BROWSER")
	case runtime.GOOS == "darwin":
		name = "open"
	case runtime.GOOS == "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", url}
	}
	return exec.CommandContext(ctx, name, args...).Run()
}
