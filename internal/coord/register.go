package coord

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Registration is an ephemeral node that names a process (a broker's id, a
// group member's consumer id) and that an earlier session of the same
// process may still hold: one killed without closing, which the service
// deletes only when that session times out.
type Registration struct {
	// Path and Data are the node and what it holds.
	Path string
	Data []byte
	// Parents creates missing parents first (CreateAll).
	Parents bool
	// Bound is how long Register waits for an earlier session's node to go.
	Bound time.Duration
	// Ours reports whether data another session holds is this process's
	// own earlier registration (Register waits for it) rather than another
	// process's (Register refuses at once).
	Ours func(held []byte) bool
	// Refused is the error for a node another process holds (stale false),
	// or one of ours that session owner still holds after Bound (stale
	// true).
	Refused func(held []byte, owner int64, stale bool) error
	// Prefix begins the message of the service's and the context's errors
	// ("client: ").
	Prefix string
	// Waiting, if set, is called once when the wait for an earlier session
	// begins; Waited when the node was then created, with how long it took.
	Waiting func(owner int64)
	Waited  func(time.Duration)
}

// Register creates r's node in s, waiting (watching the node) up to r.Bound
// for an earlier session's registration of ours to go. held is true when s
// itself already holds the node: an earlier create that failed ambiguously
// had in fact been applied (its data may be stale for the caller).
func Register(ctx context.Context, s Session, r Registration) (held bool, err error) {
	create := s.Create
	if r.Parents {
		create = s.CreateAll
	}
	var deadline *time.Timer
	var waitStart time.Time
	defer func() {
		if deadline != nil {
			deadline.Stop()
		}
	}()
	for {
		_, err := create(ctx, r.Path, r.Data, Ephemeral)
		if err == nil {
			if deadline != nil && r.Waited != nil {
				r.Waited(time.Since(waitStart))
			}
			return false, nil
		}
		if !errors.Is(err, ErrNodeExists) {
			return false, fmt.Errorf("%sregistering %s: %w", r.Prefix, r.Path, err)
		}
		data, st, gone, err := s.GetW(ctx, r.Path)
		if errors.Is(err, ErrNoNode) {
			continue // its session ended meanwhile
		}
		if err != nil {
			return false, fmt.Errorf("%sreading %s: %w", r.Prefix, r.Path, err)
		}
		if st.EphemeralOwner == s.ID() {
			return true, nil
		}
		if !r.Ours(data) {
			return false, r.Refused(data, st.EphemeralOwner, false)
		}
		if deadline == nil {
			waitStart = time.Now()
			deadline = time.NewTimer(r.Bound)
			if r.Waiting != nil {
				r.Waiting(st.EphemeralOwner)
			}
		}
		select {
		case <-gone: // deleted, or rewritten: look again
		case <-deadline.C:
			return false, r.Refused(data, st.EphemeralOwner, true)
		case <-ctx.Done():
			return false, fmt.Errorf("%swaiting for the stale registration %s to expire: %w", r.Prefix, r.Path, ctx.Err())
		}
	}
}
