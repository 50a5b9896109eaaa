package link

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// dialTimeout bounds one dial of an upstream.
const dialTimeout = 5 * time.Second

// Link is a set of proxies that fail and slow down together.
type Link struct {
	name string

	mu        sync.Mutex
	cut       bool
	latency   time.Duration
	bandwidth int64 // bytes per second per direction; 0: no cap
	closed    bool
	proxies   []*Proxy
	conns     map[net.Conn]struct{} // every open conn, both sides
	held      map[net.Conn]struct{} // accepted while cut

	up, down limiter
}

// New returns a link named name (for errors and logs).
func New(name string) *Link {
	return &Link{name: name, conns: map[net.Conn]struct{}{}, held: map[net.Conn]struct{}{}}
}

// Name returns the link's name.
func (l *Link) Name() string { return l.name }

// Proxy listens on one loopback port and forwards to its upstreams.
type Proxy struct {
	link      *Link
	ln        net.Listener
	upstreams []string

	mu   sync.Mutex
	next int
}

// Listen starts a proxy on addr ("127.0.0.1:0" for a free port) forwarding
// to upstream.
func (l *Link) Listen(addr, upstream string) (*Proxy, error) {
	return l.NewPool(addr, []string{upstream})
}

// NewPool starts a proxy on addr whose connections go to the first of
// upstreams, in turn, that accepts.
func (l *Link) NewPool(addr string, upstreams []string) (*Proxy, error) {
	if len(upstreams) == 0 {
		return nil, errors.New("link: a proxy needs an upstream")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", l.name, err)
	}
	p := &Proxy{link: l, ln: ln, upstreams: upstreams}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		ln.Close()
		return nil, fmt.Errorf("link %s: closed", l.name)
	}
	l.proxies = append(l.proxies, p)
	l.mu.Unlock()
	go p.serve()
	return p, nil
}

// Addr returns the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut breaks the link: open connections are closed, new ones are held
// without a byte forwarded until Restore.
func (l *Link) Cut() {
	l.mu.Lock()
	l.cut = true
	conns := l.conns
	l.conns = map[net.Conn]struct{}{}
	l.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Restore ends a Cut: held connections are closed (their clients
// reconnect) and new ones are forwarded again.
func (l *Link) Restore() {
	l.mu.Lock()
	l.cut = false
	held := l.held
	l.held = map[net.Conn]struct{}{}
	l.mu.Unlock()
	for c := range held {
		c.Close()
	}
}

// SetLatency sets the one-way delay of every byte (0: none).
func (l *Link) SetLatency(d time.Duration) {
	l.mu.Lock()
	l.latency = max(d, 0)
	l.mu.Unlock()
}

// SetBandwidth caps each direction to bytesPerSecond (0: no cap).
func (l *Link) SetBandwidth(bytesPerSecond int64) {
	l.mu.Lock()
	l.bandwidth = max(bytesPerSecond, 0)
	l.mu.Unlock()
}

// State describes the link's faults, e.g. "cut" or "latency 40ms, 64 KiB/s".
func (l *Link) State() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.cut:
		return "cut"
	case l.latency == 0 && l.bandwidth == 0:
		return "healthy"
	default:
		return fmt.Sprintf("latency %v, bandwidth %d B/s", l.latency, l.bandwidth)
	}
}

// Close stops every proxy of the link and closes their connections.
func (l *Link) Close() error {
	l.mu.Lock()
	l.closed = true
	proxies := l.proxies
	var all []net.Conn
	for c := range l.conns {
		all = append(all, c)
	}
	for c := range l.held {
		all = append(all, c)
	}
	l.conns, l.held = map[net.Conn]struct{}{}, map[net.Conn]struct{}{}
	l.mu.Unlock()
	for _, p := range proxies {
		p.ln.Close()
	}
	for _, c := range all {
		c.Close()
	}
	return nil
}

func (l *Link) settings() (time.Duration, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latency, l.bandwidth
}

// track registers conns as open; false if the link is cut or closed (the
// caller then closes them).
func (l *Link) track(conns ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut || l.closed {
		return false
	}
	for _, c := range conns {
		l.conns[c] = struct{}{}
	}
	return true
}

func (l *Link) untrack(conns ...net.Conn) {
	l.mu.Lock()
	for _, c := range conns {
		delete(l.conns, c)
	}
	l.mu.Unlock()
}

// hold keeps c open without forwarding while the link is cut; false if it
// is not cut any more.
func (l *Link) hold(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cut || l.closed {
		return false
	}
	l.held[c] = struct{}{}
	return true
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *Proxy) handle(client net.Conn) {
	l := p.link
	if l.hold(client) {
		return
	}
	server, err := p.dial()
	if err != nil {
		client.Close()
		return
	}
	if !l.track(client, server) {
		client.Close()
		server.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.pipe(server, client, &l.up) }()
	go func() { defer wg.Done(); l.pipe(client, server, &l.down) }()
	wg.Wait()
	l.untrack(client, server)
}

// dial connects to the next upstream that accepts, starting after the one
// used last.
func (p *Proxy) dial() (net.Conn, error) {
	p.mu.Lock()
	start := p.next
	p.next = (p.next + 1) % len(p.upstreams)
	p.mu.Unlock()
	var errs []error
	for i := range p.upstreams {
		addr := p.upstreams[(start+i)%len(p.upstreams)]
		c, err := net.DialTimeout("tcp", addr, dialTimeout)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

type chunk struct {
	data []byte
	read time.Time
}

// inFlightChunks bounds the chunks (reads of at most 32 KiB) one direction
// holds while they wait out the latency: up to 16 MiB, about what a real
// long link's TCP windows carry (Linux tunes them up to 6 MiB each way per
// connection). With 64 chunks the proxy itself capped one connection near
// 1-2 MiB per latency period (about 50 MB/s at 20 ms), which then was
// what a benchmark over it measured.
const inFlightChunks = 512

// pipe copies src to dst, each chunk delayed by the link's latency and
// paced by its bandwidth; it closes both ends when either fails.
func (l *Link) pipe(dst, src net.Conn, lim *limiter) {
	chunks := make(chan chunk, inFlightChunks)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		dst.Close()
		src.Close()
		for range chunks { // unblock the reader
		}
	}()
	for c := range chunks {
		latency, bw := l.settings()
		if wait := time.Until(c.read.Add(latency)); wait > 0 {
			time.Sleep(wait)
		}
		lim.wait(len(c.data), bw)
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
}

// limiter paces one direction of a link to a byte rate.
type limiter struct {
	mu   sync.Mutex
	next time.Time
}

func (lim *limiter) wait(n int, bytesPerSecond int64) {
	if bytesPerSecond <= 0 {
		return
	}
	lim.mu.Lock()
	now := time.Now()
	if lim.next.Before(now) {
		lim.next = now
	}
	lim.next = lim.next.Add(time.Duration(float64(n) / float64(bytesPerSecond) * float64(time.Second)))
	d := lim.next.Sub(now)
	lim.mu.Unlock()
	time.Sleep(d)
}
