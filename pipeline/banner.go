package pipeline

import (
	"fmt"
	"io"
	"strings"
)

// PrintBanner writes where every part listens, for a person to connect.
func (p *Pipeline) PrintBanner(w io.Writer) {
	coordination := "in-process coordination"
	if p.cfg.ZooKeeper != "" {
		coordination = "ZooKeeper " + p.cfg.ZooKeeper
	}
	fmt.Fprintf(w, "tributary pipeline: %d datacenters -> mirror -> %s -> loader, on %s, data in %s\n",
		len(p.cfg.Datacenters), AnalyticsCluster, coordination, p.dir)
	for _, name := range p.cfg.clusters() {
		c := p.clusters[name]
		zk := ""
		if c.ZooKeeper() != "" {
			zk = "  zookeeper " + c.ZooKeeper()
		}
		fmt.Fprintf(w, "  cluster %-10s bootstrap %s%s\n", name, strings.Join(c.Bootstrap(), ","), zk)
	}
	fmt.Fprintf(w, "  schema registry    %s\n", p.RegistryURL())
	if u := p.DashboardURL(); u != "" {
		fmt.Fprintf(w, "  audit dashboard    %s\n", u)
	}
	fmt.Fprintf(w, "  producers          %s, %g page views/s each to topic %s\n",
		strings.Join(p.cfg.Datacenters, ", "), p.cfg.Rate, p.cfg.Topic)
	fmt.Fprintf(w, "  mirror             %s -> %s (origin header %q)\n", strings.Join(p.cfg.Datacenters, ", "), AnalyticsCluster, "tributary.origin")
	mode := fmt.Sprintf("continuous, a commit every %v", p.cfg.LoadInterval)
	if p.cfg.LoaderScheduled {
		mode = fmt.Sprintf("scheduled job %q every %v", LoaderJob, p.cfg.LoadInterval)
	}
	fmt.Fprintf(w, "  loader             %s -> %s (%s)\n", AnalyticsCluster, p.cfg.OutputURI(), mode)
	fmt.Fprintf(w, "  audit              window %v, topic __audit on %s\n", p.cfg.AuditWindow, AnalyticsCluster)
}
