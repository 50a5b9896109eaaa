package broker

import (
	"errors"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// connLimiter enforces max.connections and max.connections.per.ip (with
// per-host overrides), as Kafka's acceptor does: a connection over a limit
// is accepted and closed at once. The limits are dynamic broker configs:
// setLimits changes them for the next connection (those open stay, as in
// Kafka). Safe for concurrent use.
type connLimiter struct {
	mu        sync.Mutex
	max       int // 0 = unlimited
	perIP     int // 0 = unlimited
	overrides map[string]int
	// given is the overrides as configured, before host resolution.
	given map[string]int
	total int
	byIP  map[string]int
}

func newConnLimiter(max, perIP int, overrides map[string]int) *connLimiter {
	l := &connLimiter{byIP: map[string]int{}}
	l.setLimits(max, perIP, overrides)
	return l
}

// setLimits replaces the limits; overrides naming hosts are resolved now
// (Kafka resolves them when it reads the config), unless they are the
// overrides already in force.
func (l *connLimiter) setLimits(max, perIP int, overrides map[string]int) {
	l.mu.Lock()
	same := l.given != nil && maps.Equal(l.given, overrides)
	l.max, l.perIP = max, perIP
	l.mu.Unlock()
	if same {
		return
	}
	resolved := map[string]int{}
	for host, n := range overrides {
		resolved[host] = n
		if net.ParseIP(host) == nil {
			if ips, err := net.LookupIP(host); err == nil {
				for _, ip := range ips {
					resolved[ip.String()] = n
				}
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.overrides, l.given = resolved, maps.Clone(overrides)
	if l.given == nil {
		l.given = map[string]int{}
	}
}

// limitFor returns the per-IP limit of ip (0 = unlimited).
func (l *connLimiter) limitFor(ip string) (int, bool) {
	if n, ok := l.overrides[ip]; ok {
		return n, true // an override of 0 refuses the host, as in Kafka
	}
	return l.perIP, l.perIP > 0
}

// admit counts a new connection from ip, or names the limit it hits.
func (l *connLimiter) admit(ip string) (ok bool, limit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, limited := l.limitFor(ip); limited && l.byIP[ip] >= n {
		return false, "max.connections.per.ip"
	}
	if l.max > 0 && l.total >= l.max {
		return false, "max.connections"
	}
	l.total++
	l.byIP[ip]++
	return true, ""
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

// remoteIP is the address a connection is counted under.
func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// acceptReserve holds one spare descriptor for the accept loop. When accept
// fails for lack of descriptors the spare is closed so that one connection
// can be accepted: an operator's admin client still gets in while the
// process is at its limit. The spare is taken back once a descriptor is
// free again. Used by the accept loop only.
type acceptReserve struct{ spare *os.File }

func newAcceptReserve() *acceptReserve {
	r := &acceptReserve{}
	r.refill()
	return r
}

// refill retakes the spare if it was used; false if descriptors are still short.
func (r *acceptReserve) refill() bool {
	if r.spare != nil {
		return true
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		return false
	}
	r.spare = f
	return true
}

// use gives the spare back to the kernel; false if it was used already.
func (r *acceptReserve) use() bool {
	if r.spare == nil {
		return false
	}
	r.spare.Close()
	r.spare = nil
	return true
}

func (r *acceptReserve) close() {
	if r.spare != nil {
		r.spare.Close()
		r.spare = nil
	}
}

func isNoDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// connActivity implements connections.max.idle.ms for one connection: the
// reader's deadline is pushed forward on every read and written response,
// and a deadline reached while a request is in flight (a long-poll Fetch)
// does not count as idle.
type connActivity struct {
	idle     time.Duration // <= 0: never idle
	last     atomic.Int64  // unix nanos of the last read or write
	inFlight atomic.Int32
}

func newConnActivity(idle time.Duration) *connActivity {
	a := &connActivity{idle: idle}
	a.touch()
	return a
}

func (a *connActivity) touch() { a.last.Store(time.Now().UnixNano()) }

// armRead sets c's read deadline to the end of the idle period.
func (a *connActivity) armRead(c net.Conn) {
	if a.idle <= 0 {
		return
	}
	deadline := time.Unix(0, a.last.Load()).Add(a.idle)
	if now := time.Now(); deadline.Before(now) {
		// Only while a request is in flight (see expired): check again
		// an idle period later rather than spin.
		deadline = now.Add(a.idle)
	}
	_ = c.SetReadDeadline(deadline)
}

// expired reports, after a read timed out, whether the connection really
// was idle for the whole period.
func (a *connActivity) expired() bool {
	if a.idle <= 0 || a.inFlight.Load() > 0 {
		return false
	}
	return time.Since(time.Unix(0, a.last.Load())) >= a.idle
}

// readFrame reads a size-byte frame body, growing the buffer as bytes
// arrive rather than allocating the announced size up front: a peer that
// announces 100 MB and sends nothing holds 64 KiB, not 100 MB.
func readFrame(r io.Reader, size int) ([]byte, error) {
	const step = 1 << 20
	if size <= step {
		frame := make([]byte, size)
		_, err := io.ReadFull(r, frame)
		return frame, err
	}
	frame := make([]byte, 0, step)
	for len(frame) < size {
		n := min(size-len(frame), max(len(frame), step))
		frame = slices.Grow(frame, n)
		if _, err := io.ReadFull(r, frame[len(frame):len(frame)+n]); err != nil {
			return nil, err
		}
		frame = frame[:len(frame)+n]
	}
	return frame, nil
}

// startResources logs the descriptor budget (at debug: every broker of a
// dev cluster or pipeline would print it at start) and starts the loop that takes
// back used reserve descriptors.
func (b *Broker) startResources() {
	bd := b.res.budget
	b.logger.Debug("descriptor budget", "RLIMIT_NOFILE", bd.limit, "log.max.open.files", bd.files,
		"max.connections", bd.conns, "log.descriptor.reserve", bd.logReserve, "unplanned_reserve", bd.reserve)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-b.shutdownCtx.Done():
				return
			case <-t.C:
				b.res.files.Replenish()
			}
		}
	}()
}
