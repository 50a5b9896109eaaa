package pipeline

import (
	"fmt"
	"io"
	"path/filepath"
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
		proto := ""
		if p.secure != nil {
			proto = " (" + string(c.Listeners()[0].Protocol) + ")"
		}
		fmt.Fprintf(w, "  cluster %-10s bootstrap %s%s%s\n", name, strings.Join(c.Bootstrap(), ","), proto, zk)
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
	p.printTables(w)
	if p.secure != nil {
		p.printSecure(w)
	}
}

// printSecure says what is secured and where the generated files are.
func (p *Pipeline) printSecure(w io.Writer) {
	s := p.secure
	fmt.Fprintf(w, "  secured            files in %s (CA ca.pem; <user>.password mode 0600; <user>.properties)\n", s.dir)
	fmt.Fprintf(w, "    kafka clients    %s %s to every cluster, users %s\n",
		clientsProtocol, SecureMechanism, strings.Join(p.cfg.secureUsers(), ", "))
	fmt.Fprintf(w, "    mirror target    %s %s: SSL with the mirror's client certificate (mirror.pem)\n",
		AnalyticsCluster, strings.Join(p.clusters[AnalyticsCluster].BootstrapOn(listenerMirror), ","))
	fmt.Fprintf(w, "    between brokers  listener %s: SSL, the brokers' certificates both ways\n", listenerInternal)
	fmt.Fprintf(w, "    http             registry and dashboard over HTTPS, basic authentication (%s, bcrypt)\n", filepath.Base(s.usersFile))
	fmt.Fprintf(w, "    try              tributary consume --bootstrap %s --command-config %s --topic %s\n",
		p.clusters[AnalyticsCluster].Bootstrap()[0], s.path(UserAdmin+".properties"), p.cfg.Topic)
}
