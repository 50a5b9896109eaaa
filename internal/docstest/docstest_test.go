package docstest

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseMarkers(t *testing.T) {
	good := "text\n<!-- docs-test: run -->\n```sh\necho one\n```\n\n<!-- docs-test: skip: needs a Kerberos KDC -->\n```sh\nkinit\n```\n```properties\na=b\n```\n"
	blocks, err := Parse("good.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("got %d blocks, want 3: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; !b.Run || b.Skip != "" || b.Text != "echo one\n" || b.Line != 3 || b.Lang != "sh" {
		t.Errorf("block 0: %+v", b)
	}
	if b := blocks[1]; b.Run || b.Skip != "needs a Kerberos KDC" || b.Text != "kinit\n" {
		t.Errorf("block 1: %+v", b)
	}
	if b := blocks[2]; b.Run || b.Lang != "properties" || b.Text != "a=b\n" {
		t.Errorf("block 2: %+v", b)
	}

	for name, bad := range map[string]string{
		"unmarked":         "```sh\necho\n```\n",
		"skip no reason":   "<!-- docs-test: skip -->\n```sh\necho\n```\n",
		"marker on yaml":   "<!-- docs-test: run -->\n```yaml\na: b\n```\n",
		"marker no fence":  "<!-- docs-test: run -->\ntext\n",
		"blank line above": "<!-- docs-test: run -->\n\n```sh\necho\n```\n",
		"unclosed":         "<!-- docs-test: run -->\n```sh\necho\n",
	} {
		if _, err := Parse(name+".md", []byte(bad)); !errors.Is(err, ErrMarker) {
			t.Errorf("%s: err %v, want ErrMarker", name, err)
		}
	}
}

func TestCheckProperties(t *testing.T) {
	md := "```properties\n# a comment line\n! another\noutput.uri=file:///out    # where the files go\ntopics=a|b\nname=x\t# tab\nurl=http://h/p#frag\n```\n"
	blocks, err := Parse("p.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckProperties(blocks)
	if !errors.Is(err, ErrPropertiesComment) {
		t.Fatalf("err %v, want ErrPropertiesComment", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "p.md:4:") || !strings.Contains(msg, "p.md:6:") || strings.Contains(msg, "p.md:2:") ||
		strings.Contains(msg, "p.md:5:") || strings.Contains(msg, "p.md:7:") || strings.Contains(msg, "p.md:3:") {
		t.Fatalf("wrong lines reported:\n%s", msg)
	}
}

func TestRewrite(t *testing.T) {
	r := Rewrite{PortOffset: 500, ZooKeeper: "127.0.0.1:2681/docstest-1"}
	got, err := r.Apply("kcat -b 127.0.0.1:9092,localhost:9094 http://127.0.0.1:8081/x 127.0.0.1:90921 10.0.0.5:9093 --zookeeper 127.0.0.1:2181/tributary")
	if err != nil {
		t.Fatal(err)
	}
	want := "kcat -b 127.0.0.1:9592,localhost:9594 http://127.0.0.1:8581/x 127.0.0.1:90921 10.0.0.5:9093 --zookeeper 127.0.0.1:2681/docstest-1/tributary"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, err := (Rewrite{}).Apply("x --zookeeper 127.0.0.1:2181"); err == nil || !strings.Contains(err.Error(), "TRIBUTARY_TEST_ZK") {
		t.Fatalf("a block needing ZooKeeper without one: err %v", err)
	}
}

// TestSessionFailsOnBrokenBlock proves the runner: a block whose middle
// command fails is reported with its file, line and output, and what a block
// left running in the background is ended by Close.
func TestSessionFailsOnBrokenBlock(t *testing.T) {
	md := "<!-- docs-test: run -->\n```sh\necho started > marker\nsleep 600 &\necho $! > bg.pid\n```\n" +
		"<!-- docs-test: run -->\n```sh\necho before\nls does-not-exist\necho after\n```\n"
	blocks, err := Parse("bad.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Dir: t.TempDir()}
	defer s.Close(5 * time.Second)
	ctx := context.Background()
	if _, err := s.Run(ctx, blocks[0]); err != nil {
		t.Fatal(err)
	}
	out, err := s.Run(ctx, blocks[1])
	if !errors.Is(err, ErrBlockFailed) {
		t.Fatalf("broken block: err %v, want ErrBlockFailed", err)
	}
	if !strings.Contains(err.Error(), "bad.md:8") || !strings.Contains(out, "before") || strings.Contains(out, "after") {
		t.Fatalf("report does not name the block or the output is wrong:\n%v", err)
	}
	bg := s.groups[0]
	s.Close(5 * time.Second)
	if err := syscall.Kill(-bg, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the block's background process group %d is still there after Close (kill 0: %v)", bg, err)
	}
}

func TestComparePackages(t *testing.T) {
	md := "# x\n\n## Packages\n\n| package | what |\n|---|---|\n| `a`, `a/b` | one |\n| `c` | gone |\n\n## Next\n| `z` | not this table |\n"
	table, err := PackageTable(md)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(table, " ") != "a a/b c" {
		t.Fatalf("table %v", table)
	}
	if err := ComparePackages(table, []string{"a", "a/b", "c"}); err != nil {
		t.Fatal(err)
	}
	err = ComparePackages(table, []string{"a", "a/b", "d"})
	if !errors.Is(err, ErrPackageTable) || !strings.Contains(err.Error(), "add a row): d") || !strings.Contains(err.Error(), "no such package (remove or rename): c") {
		t.Fatalf("stale table: err %v", err)
	}
}
