package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"walletsync/cli/command"
	"walletsync/remote/auth"
)

// keyResult is what key create and key show report: the key file and the identity (the
// compressed public key) a remote storage server sees when walletsync signs with it.
type keyResult struct {
	KeyFile     string `json:"keyFile"`
	IdentityKey string `json:"identityKey"`
}

func runKeyCreate(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("key create", "--out FILE [--json]", out)
	path := fs.String("out", "", "the key file to create (must not exist; written with mode 0600)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("out", *path); err != nil {
		return err
	}
	key, err := auth.CreateKeyFile(*path)
	if err != nil {
		return err
	}
	return reportKey(out, *asJSON, *path, key)
}

func runKeyShow(ctx context.Context, args []string, out io.Writer) error {
	fs := command.NewFlags("key show", "--key-file FILE [--json]", out)
	path := fs.String("key-file", "", "the key file to read")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := command.Parse(fs, args); err != nil {
		return err
	}
	if err := command.Required("key-file", *path); err != nil {
		return err
	}
	key, err := auth.LoadKeyFile(*path)
	if err != nil {
		return err
	}
	return reportKey(out, *asJSON, *path, key)
}

// reportKey prints the identity key alone on a line (or as JSON), so scripts can read it.
func reportKey(out io.Writer, asJSON bool, path string, key *secp256k1.PrivateKey) error {
	res := keyResult{KeyFile: path, IdentityKey: hex.EncodeToString(key.PubKey().SerializeCompressed())}
	return command.Report(out, asJSON, res, func(w io.Writer) { fmt.Fprintln(w, res.IdentityKey) })
}
