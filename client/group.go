package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary/tributary/internal/coord"
	"github.com/tributary/tributary/internal/network"
)

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

// GroupConsumer is one member of a consumer group coordinated through
// ZooKeeper as in the paper (§3.2) and Kafka 0.8: it registers under
// /consumers/<group>/ids, claims partitions by creating ephemeral owner
// nodes, fetches them with franz-go and hands their messages to Streams, and
// commits offsets to /consumers/<group>/offsets. See the package doc for the
// rebalance protocol.
//
// A GroupConsumer is safe for concurrent use; each Stream is meant to be
// iterated by one goroutine at a time.
type GroupConsumer struct {
	cfg     GroupConfig
	id      string
	logger  *slog.Logger
	connect coord.SessionFactory

	ctx    context.Context // cancelled when Close begins
	cancel context.CancelFunc
	closed chan struct{} // closed when Close has finished; streams end
	wg     sync.WaitGroup

	// gen is the fetch generation: bumped whenever fetching stops, so that
	// streams drop chunks fetched before. inflight counts messages whose
	// loop body is running.
	gen      atomic.Uint64
	inflight atomic.Int64

	trigger chan struct{}      // a rebalance is wanted (coalesced)
	expired chan coord.Session // a session that expired (recovered unless replaced already)
	seeks   chan seekRequest

	// commitMu serialises offset commits with ownership changes, so that a
	// commit never writes for a partition this member has released.
	commitMu sync.Mutex

	mu           sync.Mutex
	sess         coord.Session
	stopWatchers context.CancelFunc
	sub          map[string]int
	streams      map[string][]*Stream
	owned        map[topicPartition]*partitionState
	claimed      []string // owner node paths created in this session
	// settled describes the registries (members, partitions) the current
	// ownership was computed from; "" when nothing is owned.
	settled       string
	fetch         *fetcher
	meta          *kgo.Client
	adm           *kadm.Client
	metaCounts    map[string]int // counts taken from broker metadata at the last rebalance
	closeOnce     sync.Once
	closeErr      error
	rebalanceErrs atomic.Int64
}

// NewGroupConsumer validates cfg, opens a coordination session and returns
// a member that has not joined yet: CreateMessageStreams joins.
func NewGroupConsumer(ctx context.Context, cfg GroupConfig) (*GroupConsumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := loggerOr(cfg.Logger)
	id := cfg.ConsumerID
	if id == "" {
		id = defaultConsumerID(cfg.GroupID)
	}
	g := &GroupConsumer{
		cfg:     cfg,
		id:      id,
		logger:  logger.With("group", cfg.GroupID, "consumer", id),
		connect: cfg.connector(logger),
		closed:  make(chan struct{}),
		trigger: make(chan struct{}, 1),
		expired: make(chan coord.Session, 4),
		seeks:   make(chan seekRequest),
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	sess, err := g.connect(ctx)
	if err != nil {
		g.cancel()
		return nil, fmt.Errorf("client: group %s: connecting to coordination: %w", cfg.GroupID, err)
	}
	g.sess = sess
	return g, nil
}

// defaultConsumerID is Kafka 0.8's consumer id form.
func defaultConsumerID(group string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%s-%d-%s", group, host, time.Now().UnixMilli(), hex.EncodeToString(b[:]))
}

// ID is this member's consumer id.
func (g *GroupConsumer) ID() string { return g.id }

// Owned returns the partitions this member owns now, per topic, sorted.
func (g *GroupConsumer) Owned() map[string][]int32 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]int32{}
	for tp := range g.owned {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// CreateMessageStreams subscribes to topic with n streams and joins the
// group: it registers this member, runs the first rebalance (returning its
// error) and starts fetching. It may be called once per consumer.
func (g *GroupConsumer) CreateMessageStreams(ctx context.Context, topic string, n int) ([]*Stream, error) {
	m, err := g.CreateMessageStreamsByTopic(ctx, map[string]int{topic: n})
	if err != nil {
		return nil, err
	}
	return m[topic], nil
}

// CreateMessageStreamsByTopic is CreateMessageStreams for several topics:
// topic -> number of streams.
func (g *GroupConsumer) CreateMessageStreamsByTopic(ctx context.Context, topics map[string]int) (map[string][]*Stream, error) {
	if len(topics) == 0 {
		return nil, fmt.Errorf("%w: no topic to subscribe to", ErrInvalidConfig)
	}
	for t, n := range topics {
		if t == "" || n < 1 {
			return nil, fmt.Errorf("%w: topic %q with %d streams", ErrInvalidConfig, t, n)
		}
	}
	g.mu.Lock()
	switch {
	case g.ctx.Err() != nil:
		g.mu.Unlock()
		return nil, ErrClosed
	case g.sub != nil:
		g.mu.Unlock()
		return nil, ErrStreamsCreated
	}
	g.sub = maps.Clone(topics)
	g.streams = map[string][]*Stream{}
	for t, n := range topics {
		for i := range n {
			g.streams[t] = append(g.streams[t], newStream(g, t, i))
		}
	}
	out := maps.Clone(g.streams)
	sess := g.sess
	g.mu.Unlock()

	if err := g.openMeta(ctx, sess); err != nil {
		return nil, err
	}
	if err := g.join(ctx, sess); err != nil {
		return nil, err
	}
	if err := g.syncedRebalance(ctx); err != nil {
		if !errors.Is(err, errSessionLost) {
			return nil, err
		}
		// The run loop below registers again on a new session.
		g.sessionExpired(sess)
	}
	g.wg.Add(1)
	go g.run()
	if !g.cfg.DisableAutoCommit {
		g.wg.Add(1)
		go g.autoCommit()
	}
	return out, nil
}

// openMeta starts the client used for metadata and offset listing.
func (g *GroupConsumer) openMeta(ctx context.Context, sess coord.Session) error {
	seeds, err := g.seeds(ctx, sess)
	if err != nil {
		return err
	}
	cl, err := network.NewClient(network.ClientConfig{Brokers: seeds, Logger: g.logger}.Secured(g.cfg.Security))
	if err != nil {
		return fmt.Errorf("client: group %s: %w", g.cfg.GroupID, err)
	}
	g.mu.Lock()
	g.meta, g.adm = cl, kadm.NewClient(cl)
	g.mu.Unlock()
	return nil
}

// seeds are the configured brokers, else the registered ones.
func (g *GroupConsumer) seeds(ctx context.Context, sess coord.Session) ([]string, error) {
	if len(g.cfg.Brokers) > 0 {
		return g.cfg.Brokers, nil
	}
	addrs, err := readBrokerAddrs(ctx, sess)
	if err != nil {
		return nil, fmt.Errorf("client: group %s: reading broker registry: %w", g.cfg.GroupID, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no Brokers configured and none registered under %s", ErrInvalidConfig, brokerIDsPath)
	}
	return addrs, nil
}

// join registers this member and arms the watches that trigger rebalances.
func (g *GroupConsumer) join(ctx context.Context, sess coord.Session) error {
	if err := g.register(ctx, sess); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(g.ctx)
	g.mu.Lock()
	g.stopWatchers = cancel
	topics := slices.Sorted(maps.Keys(g.sub))
	g.mu.Unlock()
	paths := []string{idsPath(g.cfg.GroupID), brokerIDsPath}
	for _, t := range topics {
		paths = append(paths, coord.Join(brokerTopicsPath, t))
	}
	for i, p := range paths {
		g.wg.Add(1)
		go g.watch(wctx, sess, p, i < 2)
	}
	g.wg.Add(1)
	go g.watchSession(wctx, sess)
	return nil
}

// staleRegistrationSlack is added to the session timeout to bound the wait
// for this member's own stale registration: ZooKeeper expires sessions on
// tick boundaries and may raise a short timeout to two ticks.
const staleRegistrationSlack = 10 * time.Second

// register creates this member's ephemeral node.
//
// A node already there under this consumer id is told apart by its data. A
// registration with this member's subscription (the same topics, stream
// counts and pattern) is taken for an earlier session of this member: a
// process restarted with the same consumer.id right after a crash, or this
// member's own session that just expired. ZooKeeper deletes it when that
// session times out, so register waits for it, watching the node, up to
// zookeeper.session.timeout.ms plus staleRegistrationSlack. A registration
// with another subscription is another consumer's: ErrConsumerIDInUse at
// once, as is one with ours that outlives the bound (a live twin).
func (g *GroupConsumer) register(ctx context.Context, sess coord.Session) error {
	g.mu.Lock()
	sub := maps.Clone(g.sub)
	g.mu.Unlock()
	data := encodeRegistration(sub, time.Now())
	path := idPath(g.cfg.GroupID, g.id)
	bound := orDuration(g.cfg.ZooKeeperSessionTimeout, DefaultZooKeeperSession) + staleRegistrationSlack
	held, err := coord.Register(ctx, sess, coord.Registration{
		Path:    path,
		Data:    data,
		Parents: true,
		Bound:   bound,
		Ours:    func(held []byte) bool { return sameSubscription(held, sub) },
		Refused: func(held []byte, owner int64, stale bool) error {
			if !stale {
				return fmt.Errorf("%w: %s is registered with another subscription: %s", ErrConsumerIDInUse, path, held)
			}
			return fmt.Errorf("%w: %s is still registered by session 0x%x after %v (another live consumer with this consumer.id?)",
				ErrConsumerIDInUse, path, owner, bound)
		},
		Prefix: "client: ",
		Waiting: func(owner int64) {
			g.logger.Warn("consumer id registered with this member's subscription by an earlier session; "+
				"waiting for that session to expire", "path", path, "session", fmt.Sprintf("0x%x", owner), "bound", bound)
		},
		Waited: func(waited time.Duration) {
			g.logger.Info("stale registration gone", "waited", waited.Round(time.Millisecond))
		},
	})
	if err != nil {
		return err
	}
	if held {
		_, err := sess.Set(ctx, path, data, coord.AnyVersion)
		return err
	}
	g.logger.Info("registered consumer", "path", path)
	return nil
}

// sameSubscription reports whether a registration's data subscribes to
// exactly sub, statically. Unparseable data is another consumer's.
func sameSubscription(data []byte, sub map[string]int) bool {
	var reg consumerRegistration
	if err := json.Unmarshal(data, &reg); err != nil {
		return false
	}
	return reg.Pattern == "static" && maps.Equal(reg.Subscription, sub)
}

func (g *GroupConsumer) backoff() time.Duration {
	return orDuration(g.cfg.RebalanceBackoff, DefaultRebalanceBackoff)
}

// watch re-arms a watch on path until ctx ends, asking for a rebalance on
// every event: children of the consumer and broker registries, data of a
// topic's registry. A missing node is watched for creation.
func (g *GroupConsumer) watch(ctx context.Context, sess coord.Session, path string, children bool) {
	defer g.wg.Done()
	for ctx.Err() == nil {
		var ch <-chan coord.Event
		var err error
		if children {
			_, _, ch, err = sess.ChildrenW(ctx, path)
		}
		if !children || errors.Is(err, coord.ErrNoNode) {
			_, _, ch, err = sess.ExistsW(ctx, path)
		}
		if err != nil {
			if errors.Is(err, coord.ErrSessionExpired) || errors.Is(err, coord.ErrClosed) || ctx.Err() != nil {
				return
			}
			g.logger.Warn("arming watch failed; retrying", "path", path, "err", err)
			_ = sleepCtx(ctx, g.backoff())
			continue
		}
		// Ask for a rebalance only now that the watch is armed: a change
		// between the last rebalance's read and this arm fires no event,
		// but the rebalance asked for here reads it. (A rebalance that
		// finds the registries as they were is a no-op.)
		g.requestRebalance()
		select {
		case ev := <-ch:
			if ev.Type == coord.EventSessionLost {
				return
			}
			g.logger.Debug("watch fired", "path", path, "event", ev.Type)
		case <-ctx.Done():
			return
		}
	}
}

// watchSession reports the session's expiry to the run loop.
func (g *GroupConsumer) watchSession(ctx context.Context, sess coord.Session) {
	defer g.wg.Done()
	for {
		select {
		case st := <-sess.States():
			if st == coord.StateExpired {
				g.sessionExpired(sess)
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// sessionExpired asks the run loop to replace sess. Reports of one session
// may come twice (its state watch and a failed rebalance); recoverSession
// ignores a session it has replaced already.
func (g *GroupConsumer) sessionExpired(sess coord.Session) {
	select {
	case g.expired <- sess:
	default: // full of reports that lead to the same recovery
	}
}

func (g *GroupConsumer) requestRebalance() {
	select {
	case g.trigger <- struct{}{}:
	default:
	}
}

// run serialises rebalances, session recovery and seeks.
func (g *GroupConsumer) run() {
	defer g.wg.Done()
	refresh := time.NewTicker(orDuration(g.cfg.MetadataRefresh, DefaultMetadataRefresh))
	defer refresh.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.trigger:
			g.rebalanceReporting()
		case sess := <-g.expired:
			g.recoverSession(sess)
		case r := <-g.seeks:
			r.reply <- g.doSeek(g.ctx, r)
		case <-refresh.C:
			if g.metadataChanged() {
				g.rebalanceReporting()
			}
		}
	}
}

// rebalanceReporting runs a rebalance; on failure it tells the streams and
// tries again later, so a group that failed to settle does not stay idle
// until the next membership change. A rebalance cut short by the loss of
// the session is no failure: the member registers again on a new session
// and rebalances there (recoverSession), and the streams go on.
func (g *GroupConsumer) rebalanceReporting() {
	g.mu.Lock()
	sess := g.sess
	g.mu.Unlock()
	err := g.syncedRebalance(g.ctx)
	if err == nil || g.ctx.Err() != nil {
		return
	}
	if errors.Is(err, errSessionLost) {
		g.logger.Warn("rebalance interrupted: coordination session lost; registering again", "err", err)
		g.sessionExpired(sess)
		return
	}
	g.rebalanceErrs.Add(1)
	g.logger.Error("rebalance failed", "err", err)
	g.broadcastError(err)
	time.AfterFunc(g.backoff(), g.requestRebalance)
}

// recoverSession replaces expired, the expired session, unless that was
// done already: the ephemeral nodes are gone (others may own our partitions
// by now), so fetching stops without a commit, and the member registers and
// rebalances anew.
func (g *GroupConsumer) recoverSession(expired coord.Session) {
	g.mu.Lock()
	current := g.sess
	g.mu.Unlock()
	if expired != current {
		return // a late report of a session replaced already
	}
	g.logger.Warn("coordination session expired; registering again")
	g.stopFetching(false)
	g.commitMu.Lock()
	g.mu.Lock()
	g.owned, g.claimed, g.settled = nil, nil, ""
	old := g.sess
	if g.stopWatchers != nil {
		g.stopWatchers()
	}
	g.mu.Unlock()
	g.commitMu.Unlock()
	_ = old.Close()
	for g.ctx.Err() == nil {
		sess, err := g.connect(g.ctx)
		if err == nil {
			g.mu.Lock()
			g.sess = sess
			g.mu.Unlock()
			if err = g.join(g.ctx, sess); err == nil {
				g.rebalanceReporting()
				return
			}
		}
		g.logger.Warn("reconnecting coordination session failed", "err", err)
		_ = sleepCtx(g.ctx, g.backoff())
	}
}

// Close leaves the group: it stops fetching, waits (up to
// rebalance.backoff.ms) for messages being handled, commits, releases its
// partitions, deletes its registration, closes the session and ends every
// stream. ctx bounds the commit and release. Close is idempotent.
func (g *GroupConsumer) Close(ctx context.Context) error {
	g.closeOnce.Do(func() {
		g.cancel()
		g.wg.Wait()
		var errs []error
		if err := g.stopFetchingCtx(ctx, true); err != nil {
			errs = append(errs, err)
		}
		g.releaseAll(ctx)
		g.mu.Lock()
		sess, meta, joined := g.sess, g.meta, g.sub != nil
		g.mu.Unlock()
		if joined {
			if err := g.deregister(ctx, sess); err != nil {
				errs = append(errs, err)
			}
		}
		if err := sess.Close(); err != nil && !errors.Is(err, coord.ErrClosed) && !errors.Is(err, coord.ErrSessionExpired) {
			errs = append(errs, err)
		}
		if meta != nil {
			meta.Close()
		}
		close(g.closed)
		g.closeErr = errors.Join(errs...)
	})
	return g.closeErr
}

// deregister deletes this member's registration if sess owns it: a member
// refused at join (ErrConsumerIDInUse) must not delete the registration of
// the consumer that holds its id.
func (g *GroupConsumer) deregister(ctx context.Context, sess coord.Session) error {
	path := idPath(g.cfg.GroupID, g.id)
	_, st, err := sess.Get(ctx, path)
	if err == nil {
		if st.EphemeralOwner != sess.ID() {
			return nil
		}
		err = sess.Delete(ctx, path, st.Version)
	}
	if err != nil && !errors.Is(err, coord.ErrNoNode) && !sessionGone(err) {
		return err
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
