package loader_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tributary/tributary/loader"
)

// TestCrashAtEveryStep kills a loader process (SIGKILL, through the test
// hook) at every step of the commit protocol, in its second commit, then
// runs the loader normally: every record lands exactly once, on both file
// systems, and the audit events count every record once.
func TestCrashAtEveryStep(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "crash", n: 3000, partitions: 2, start: hourStart(), span: 2 * time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	for _, fc := range slices.Concat(fileSystems, kerberizedFileSystems) {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel() // each file system's steps have their own bases and jobs
			for step := 1; step <= loader.NumSteps; step++ {
				t.Run(fmt.Sprintf("step%d", step), func(t *testing.T) {
					fsys, base, uri := fc.open(t)
					job := fmt.Sprintf("crash-%s-%d", fc.name, step)
					cfg := fc.config(t, c, job, d.topic, uri)
					cfg.CommitRecords = 700 // several commits per partition, each with files of 2 schemas
					cfg.Codec = map[string]string{"local": "snappy", "hdfs": "deflate"}[fc.name]
					ch := startChild(t, cfg, fmt.Sprintf("%s=%d:2", loader.CrashEnv, step))
					if err := ch.wait(t); !killedBySIGKILL(err) {
						t.Fatalf("crashing run ended with %v, want SIGKILL at step %d:\n%s", err, step, ch.output())
					}
					runChild(t, cfg)
					checkExactlyOnce(t, d, readAll(t, fsys, base))
					checkAudit(t, c, job, map[string]int64{d.topic: int64(d.n)})
					if t.Failed() {
						t.Logf("crashing run:\n%s", ch.output())
					}
				})
			}
		})
	}
}
