package loader_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
	"github.com/tributary/tributary/internal/testkit/testenv"
	"github.com/tributary/tributary/loader"
)

// TestKerberosWrongKeytab runs a loader whose keytab holds other keys than
// the KDC's: the run fails naming connect.hdfs.keytab, and nothing is
// written under the output base (no data, no offsets, no manifest).
func TestKerberosWrongKeytab(t *testing.T) {
	c := newCluster(t)
	d := dataset{topic: "wrong-keytab", n: 100, partitions: 1, start: hourStart(), span: time.Hour}
	c.CreateTopic(t, d.topic, d.partitions)
	c.produceDataset(t, d)
	secure := testenv.SecureHDFS(t, "authentication")
	fsys, base, uri, opts := filesystest.KerberizedHDFS(t, "authentication")
	cfg := baseConfig(c, "wrong-keytab", d.topic, uri)
	k := *opts.Kerberos
	k.Keytab = filesystest.WrongKeytab(t, secure)
	opts.Kerberos = &k
	cfg.HDFS = opts
	ch := startChild(t, cfg)
	err := ch.wait(t)
	if err == nil {
		t.Fatalf("the loader ran with a wrong keytab:\n%s", ch.output())
	}
	if out := ch.output(); !strings.Contains(out, "connect.hdfs.keytab "+k.Keytab) || !strings.Contains(out, "PREAUTH_FAILED") {
		t.Errorf("the error does not name connect.hdfs.keytab and the KDC's answer:\n%s", out)
	}
	list, err := fsys.ReadDir(base)
	if err != nil || len(list) != 0 {
		t.Errorf("the failed run left %d entries under %s (%v)", len(list), base, err)
	}
}

// TestKerberosKeys reads the Kerberos keys through ConfigFromProperties and
// refuses integrity naming the key.
func TestKerberosKeys(t *testing.T) {
	secure := testenv.SecureHDFS(t, "privacy")
	props := filesystest.KerberosProperties(secure)
	for k, v := range map[string]string{"name": "j", "bootstrap.servers": "b:9092", "schema.registry.url": "http://r",
		"topics": "t", "output.uri": "hdfs://" + secure.Addr + "/x", "kerberos.ticket.renew.period.ms": "600000"} {
		props[k] = v
	}
	cfg, unknown, err := loader.ConfigFromProperties(props)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("ConfigFromProperties: %v (unknown %v)", err, unknown)
	}
	if cfg.HDFS.Kerberos == nil || cfg.HDFS.Kerberos.Keytab != secure.ClientKeytab || cfg.HDFS.DataTransferProtection != "privacy" {
		t.Errorf("HDFS options %+v", cfg.HDFS)
	}
	props["dfs.data.transfer.protection"] = "integrity"
	_, _, err = loader.ConfigFromProperties(props)
	if !errors.Is(err, loader.ErrInvalidConfig) || !errors.Is(err, filesys.ErrHDFSConfig) ||
		!strings.Contains(err.Error(), "dfs.data.transfer.protection=integrity") {
		t.Errorf("integrity: %v, want ErrInvalidConfig naming dfs.data.transfer.protection=integrity", err)
	}
}
