//go:build !race

package client

import (
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/testenv"
)

// TestEnsembleGroupSurvivesKilledConsumer is issue 5's full kill scenario
// (see killedConsumer): 1,000,000 records, 3 brokers, the group and broker
// registries on the 3-node test ensemble. It is built without -race only:
// under the race detector a million records take minutes on two cores, and
// go-zookeeper has a data race on reconnect. `make test` runs it in its
// ensemble pass (-run Ensemble, no -race).
func TestEnsembleGroupSurvivesKilledConsumer(t *testing.T) {
	servers, _ := testenv.ZooKeeperEnsemble(t)
	killedConsumer(t, newZooKeeperOn(t, strings.Join(servers, ","), killSession), 1_000_000)
}
