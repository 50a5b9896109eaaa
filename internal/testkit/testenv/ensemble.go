package testenv

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// ensembleControlTimeout bounds one stop or start of an ensemble member; a
// start includes the wait until the member serves again.
const ensembleControlTimeout = 2 * time.Minute

// ControlEnsemble runs the ensemble control script with action ("stop",
// "start", or "kill" for a SIGKILL) on member 1..3, and fails t with the
// script's output if it does not succeed in time. Stop and kill return once
// the process is gone; start returns once the member serves.
//
// Members are shared by every test package of one `make test` run, and
// packages run in parallel: a test that stops a member must start it again
// (t.Cleanup), and only one package should take members down.
func ControlEnsemble(t testing.TB, action string, member int) {
	t.Helper()
	_, control := ZooKeeperEnsemble(t)
	ctx, cancel := context.WithTimeout(context.Background(), ensembleControlTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, control, action, strconv.Itoa(member)).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s %d: %v\n%s", control, action, member, err, out)
	}
}
