package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tributary/tributary/internal/properties"
	"github.com/tributary/tributary/jobs"
)

// startScheduledLoader runs the loader as a job of the jobs scheduler: a
// `tributary loader run --config <Dir>/loader.properties` child process of
// Config.Executable every LoadInterval, one run at a time, with its
// history in the analytics cluster's coordination service. Each run loads
// what analytics holds at its start and commits, so a record waits up to
// one interval plus a run for its file.
func (p *Pipeline) startScheduledLoader(ctx context.Context) (*part, error) {
	props := map[string]string{
		"name":                LoaderJob,
		"bootstrap.servers":   strings.Join(p.clusters[AnalyticsCluster].Bootstrap(), ","),
		"schema.registry.url": p.RegistryURL(),
		"topics":              regexp.QuoteMeta(p.cfg.Topic),
		"output.uri":          p.cfg.OutputURI(),
		"audit.cluster":       AnalyticsCluster,
		"audit.window.ms":     fmt.Sprint(p.cfg.AuditWindow.Milliseconds()),
	}
	if p.cfg.PartitionDuration > 0 {
		props["partition.duration.ms"] = fmt.Sprint(p.cfg.PartitionDuration.Milliseconds())
	}
	maps.Copy(props, p.cfg.HDFSOptions.Properties())
	if p.secure != nil {
		// The loader's own user, its password read from its file.
		maps.Copy(props, p.secure.clientProps("loader", clientsProtocol))
		maps.Copy(props, p.secure.registryProps("loader"))
	}
	conf := filepath.Join(p.dir, "loader.properties")
	if err := writeProperties(conf, "the scheduled loader job's configuration", props); err != nil {
		return nil, err
	}
	spec := jobs.Spec{
		Name:     LoaderJob,
		Schedule: "@every " + p.cfg.LoadInterval.String(),
		Kind:     jobs.KindLoader,
		Args:     map[string]any{"config": conf},
		Timeout:  jobs.Duration(10 * p.cfg.LoadInterval),
	}
	job, err := spec.Validate(0)
	if err != nil {
		return nil, err
	}
	s, err := jobs.New(jobs.Config{
		Jobs:       []jobs.Job{job},
		Connect:    p.clusters[AnalyticsCluster].Connector(),
		ID:         "pipeline-scheduler",
		Executable: p.cfg.Executable,
		Logger:     p.logger.With("part", "loader", "scheduler", "jobs"),
	})
	if err != nil {
		return nil, err
	}
	return p.runPart("loader", s.Run), nil
}

// writeProperties writes a properties file (mode 0600) headed by the
// comment what, escaped so that a reader gets back exactly props (a
// QuoteMeta'd topic keeps its backslashes).
func writeProperties(path, what string, props map[string]string) error {
	var b bytes.Buffer
	b.WriteString("# Written by tributary pipeline: " + what + ".\n")
	if err := properties.Write(&b, props); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}
