package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/internal/pki"
)

// certsOptions are the flags of `tributary certs`.
type certsOptions struct {
	dir      string
	hosts    []string
	servers  []string
	clients  []string
	validity time.Duration
	force    bool
}

// certName is what a server or client name may be: it becomes a file name
// and a certificate's CN.
var certName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func newCertsCommand() *cobra.Command {
	var o certsOptions
	cmd := &cobra.Command{
		Use:   "certs --dir DIR [--host H]... [--server NAME]... [--client NAME]...",
		Short: "Generate a test CA and server and client certificates (PEM)",
		Long: "Generate a new self-signed CA and the certificates it issues, for test and benchmark setups: " +
			"DIR/ca.pem (the truststore of clients and brokers, ssl.truststore.type=PEM), " +
			"DIR/<server>.pem per --server (key and chain in one file, ssl.keystore.type=PEM, " +
			"for the --host names and addresses) and DIR/<client>.pem per --client (a client certificate " +
			"for mutual TLS, CN=<client>). Keys are ECDSA P-256, files mode 0600. The CA's key is not kept: " +
			"run again (with --force) to issue more. Production certificates come from your own CA.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCerts(cmd, o) },
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "directory to write into (created if missing; required)")
	cmd.Flags().StringSliceVar(&o.hosts, "host", []string{"localhost", "127.0.0.1"}, "host names and IP addresses of the server certificates (repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&o.servers, "server", []string{"broker"}, "server certificates to issue, by name (repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&o.clients, "client", nil, "client certificates to issue, by name (repeatable or comma-separated)")
	cmd.Flags().DurationVar(&o.validity, "validity", pki.DefaultValidity, "how long the certificates are valid")
	cmd.Flags().BoolVar(&o.force, "force", false, "overwrite existing files")
	return cmd
}

func (o certsOptions) validate() error {
	if strings.TrimSpace(o.dir) == "" {
		return errors.New("--dir is required")
	}
	if o.validity <= 0 {
		return fmt.Errorf("--validity %s: must be positive", o.validity)
	}
	if len(o.servers) > 0 && len(o.hosts) == 0 {
		return errors.New("--host: a server certificate needs at least one host")
	}
	seen := map[string]string{"ca": "the CA"}
	for _, n := range o.servers {
		if err := checkCertName("--server", n, seen); err != nil {
			return err
		}
	}
	for _, n := range o.clients {
		if err := checkCertName("--client", n, seen); err != nil {
			return err
		}
	}
	for _, h := range o.hosts {
		if h == "" || strings.ContainsAny(h, "/ ,") {
			return fmt.Errorf("--host %q: not a host name or address", h)
		}
	}
	return nil
}

// checkCertName checks one --server or --client name, unique across both
// (each is a file in the same directory).
func checkCertName(flag, name string, seen map[string]string) error {
	if !certName.MatchString(name) {
		return fmt.Errorf("%s %q: want letters, digits, '.', '_' or '-'", flag, name)
	}
	if other, ok := seen[name]; ok {
		return fmt.Errorf("%s %q: the same file as %s", flag, name, other)
	}
	seen[name] = flag + " " + name
	return nil
}

func runCerts(cmd *cobra.Command, o certsOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	files := []string{"ca.pem"}
	for _, n := range append(append([]string{}, o.servers...), o.clients...) {
		files = append(files, n+".pem")
	}
	if !o.force {
		for _, f := range files {
			p := filepath.Join(o.dir, f)
			if _, err := os.Stat(p); err == nil {
				return fmt.Errorf("--dir %s: %s exists (--force overwrites; certificates of the old CA then stop verifying)", o.dir, f)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("--dir %s: %w", o.dir, err)
			}
		}
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return fmt.Errorf("--dir %s: %w", o.dir, err)
	}
	ca, err := pki.NewCA("tributary certs CA")
	if err != nil {
		return err
	}
	if err := ca.WritePEM(filepath.Join(o.dir, "ca.pem")); err != nil {
		return fmt.Errorf("--dir %s: %w", o.dir, err)
	}
	issue := func(name string, opts pki.Options) error {
		opts.CommonName, opts.Organization, opts.Validity = name, "tributary", o.validity
		leaf, err := ca.Issue(opts)
		if err == nil {
			err = leaf.WritePEM(filepath.Join(o.dir, name+".pem"))
		}
		if err != nil {
			return fmt.Errorf("certificate %s: %w", name, err)
		}
		return nil
	}
	for _, n := range o.servers {
		// Server and client: a broker's certificate is also its client
		// certificate on the other brokers' mutual-TLS listener.
		if err := issue(n, pki.Options{Hosts: o.hosts}); err != nil {
			return err
		}
	}
	for _, n := range o.clients {
		if err := issue(n, pki.Options{Client: true}); err != nil {
			return err
		}
	}
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		abs = o.dir
	}
	out := cmd.OutOrStdout()
	for _, f := range files {
		fmt.Fprintln(out, filepath.Join(abs, f))
	}
	return nil
}
