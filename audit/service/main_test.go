package service

import (
	"os"
	"testing"

	"github.com/tributary/tributary/internal/testkit/testproc"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }
