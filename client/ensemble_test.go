//go:build !race

package client

import (
	"os"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

// TestEnsembleGroupSurvivesKilledConsumer is issue 5's kill scenario (see
// killedConsumer) with the group and broker registries on the 3-node test
// ensemble and 3 brokers: 200,000 records, the 1,000,000 with
// TRIBUTARY_FULL=1. It is built without -race only:
// under the race detector a million records take minutes on two cores.
// `make test` runs it in its ensemble pass (-run Ensemble, no -race).
func TestEnsembleGroupSurvivesKilledConsumer(t *testing.T) {
	servers, _ := testenv.ZooKeeperEnsemble(t)
	n := 200_000
	if os.Getenv("TRIBUTARY_FULL") == "1" {
		n = 1_000_000
	}
	killedConsumer(t, newZooKeeperOn(t, strings.Join(servers, ","), killSession), n)
}
