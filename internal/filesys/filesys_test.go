package filesys_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tributary/tributary/internal/filesys"
	"github.com/tributary/tributary/internal/filesys/filesystest"
)

func TestLocal(t *testing.T) {
	filesystest.Run(t, func(t *testing.T) (filesys.FS, string) { return filesystest.Local(t) })
}

func TestHDFS(t *testing.T) {
	filesystest.Run(t, func(t *testing.T) (filesys.FS, string) { return filesystest.HDFS(t) })
}

func TestOpenURI(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ uri, base string }{
		{"file:///var/data/x/", "/var/data/x"},
		{"/abs/dir", "/abs/dir"},
	} {
		fsys, base, err := filesys.Open(ctx, tc.uri)
		if err != nil || base != tc.base || fsys == nil {
			t.Errorf("Open(%q) = %v, %q, %v", tc.uri, fsys, base, err)
		}
	}
	for _, bad := range []string{"", "s3://bucket/x", "file://host/x", "hdfs://nohostport/x"} {
		if _, _, err := filesys.Open(ctx, bad); !errors.Is(err, filesys.ErrBadURI) {
			t.Errorf("Open(%q): %v, want ErrBadURI", bad, err)
		}
	}
	addrs, usr, base, err := filesys.ParseHDFSURI("hdfs://etl@nn1:8020,nn2:8020/data/logs")
	if err != nil || len(addrs) != 2 || addrs[1] != "nn2:8020" || usr != "etl" || base != "/data/logs" {
		t.Errorf("ParseHDFSURI = %v %q %q %v", addrs, usr, base, err)
	}
}
