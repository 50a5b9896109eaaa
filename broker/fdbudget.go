package broker

import (
	"syscall"

	"github.com/tributary/tributary/broker/config"
)

// descriptorBudget splits RLIMIT_NOFILE between segment files, client
// connections and a reserve for everything else (listeners, ZooKeeper,
// checkpoint and snapshot writes, directory syncs), so that no flood of one
// kind can take the descriptors another needs.
type descriptorBudget struct {
	limit      int // soft RLIMIT_NOFILE (Go raises it to the hard limit at start)
	files      int // log.max.open.files: the FileCache's capacity
	conns      int // max.connections, or what is left after files and reserve
	reserve    int // never planned for: transient opens, listeners, ZooKeeper
	logReserve int // log.descriptor.reserve: spares held by the FileCache
	acceptRsv  int // spares held by the accept loop
}

// softNoFileLimit returns the soft RLIMIT_NOFILE. Since Go 1.19 the runtime
// raises it to the hard limit at start (os package init), so there is
// nothing to raise here.
func softNoFileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 1 << 20
	}
	return int(rl.Cur)
}

// planDescriptors divides limit. The fixed reserve is 64 or 1/32 of the
// limit, whichever is more; segment files get half of the rest unless
// log.max.open.files says otherwise; connections get what remains unless
// max.connections is lower.
func planDescriptors(limit int, lc config.Limits) descriptorBudget {
	b := descriptorBudget{limit: limit, acceptRsv: 1, logReserve: max(lc.DescriptorReserve, 0)}
	b.reserve = max(64, limit/32)
	rest := max(limit-b.reserve-b.logReserve-b.acceptRsv, 2)
	b.files = lc.MaxOpenFiles
	if b.files == 0 {
		b.files = max(rest/2, 1)
	}
	b.conns = max(rest-b.files, 1)
	if lc.MaxConnections > 0 {
		// An explicit max.connections wins even over the plan: the
		// operator may know the limit is higher than it looks.
		b.conns = lc.MaxConnections
	}
	return b
}
