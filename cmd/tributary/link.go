package main

import (
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary/tributary/pipeline/soak/link"
)

// newLinkCommand runs one loopback link proxy (package pipeline/soak/link)
// as a process of its own, for benchmarks that put a slow link between
// processes they do not build (scripts/bench-vs-mm2.sh).
func newLinkCommand() *cobra.Command {
	var listen, upstream string
	var latency time.Duration
	var bandwidth int64
	cmd := &cobra.Command{
		Use:   "link --listen HOST:PORT --upstream HOST:PORT [--latency D] [--bandwidth B]",
		Short: "Forward one TCP port to another with added latency or a bandwidth cap",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if upstream == "" {
				return fmt.Errorf("--upstream: required")
			}
			if latency < 0 || bandwidth < 0 {
				return fmt.Errorf("--latency and --bandwidth must not be negative")
			}
			l := link.New("link")
			defer l.Close()
			l.SetLatency(latency)
			l.SetBandwidth(bandwidth)
			p, err := l.Listen(listen, upstream)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "link %s -> %s: %s\n", p.Addr(), upstream, l.State())
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on")
	cmd.Flags().StringVar(&upstream, "upstream", "", "address every connection is forwarded to")
	cmd.Flags().DurationVar(&latency, "latency", 0, "one-way delay added to every byte in each direction (a round trip gains twice this)")
	cmd.Flags().Int64Var(&bandwidth, "bandwidth", 0, "bytes per second per direction (0: no cap)")
	return cmd
}
