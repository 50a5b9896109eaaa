package entityconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary/tributary/internal/coord"
)

// Layout (frozen: Kafka's).
const (
	// Root holds every entity type's nodes.
	Root = "/config"
	// ChangesPath holds the change notifications.
	ChangesPath = "/config/changes"
	// ChangePrefix names each notification (a persistent sequential node).
	ChangePrefix = "config_change_"
	// DefaultEntity is the node name of a default entity
	// (/config/clients/<default>, /config/users/<default>/clients/<default>).
	DefaultEntity = "<default>"
	// configVersion and changeVersion are the "version" fields Kafka 2.8
	// writes in an entity config and in a change notification.
	configVersion = 1
	changeVersion = 2
)

// casAttempts bounds Update's compare-and-set retries.
const casAttempts = 10

// ErrMalformed marks an entity node or notification that is not Kafka's
// JSON.
var ErrMalformed = errors.New("entityconfig: malformed config node")

// Sanitize is Kafka's Sanitizer.sanitize for entity names in node names:
// URL encoding of everything but letters, digits, '.', '-' and '_'.
func Sanitize(name string) string {
	var b strings.Builder
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// Desanitize undoes Sanitize (Kafka's Sanitizer.desanitize, URL decoding).
func Desanitize(node string) (string, error) {
	s, err := url.QueryUnescape(node)
	if err != nil {
		return "", fmt.Errorf("%w: node name %q: %w", ErrMalformed, node, err)
	}
	return s, nil
}

// Path is the node of an entity path ("users/alice" → /config/users/alice).
func Path(entityPath string) string { return Root + "/" + entityPath }

// record is the JSON of an entity node.
type record struct {
	Version int               `json:"version"`
	Config  map[string]string `json:"config"`
}

// Decode parses an entity node; an empty node, or one without a config
// map, is an empty config.
func Decode(entityPath string, data []byte) (map[string]string, error) {
	if len(data) == 0 {
		// A parent made on the way to a child (users/<u> of
		// users/<u>/clients/<c>), by Kafka's createRecursive or our
		// CreateAll, holds nothing.
		return map[string]string{}, nil
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, entityPath, err)
	}
	if r.Config == nil {
		r.Config = map[string]string{}
	}
	return r.Config, nil
}

// Encode is the node data of a config.
func Encode(config map[string]string) []byte {
	if config == nil {
		config = map[string]string{}
	}
	data, _ := json.Marshal(record{Version: configVersion, Config: config})
	return data
}

// Read reads an entity's config and the node's version; a missing node is
// an empty config with version -1.
func Read(ctx context.Context, s coord.Session, entityPath string) (map[string]string, int32, error) {
	data, st, err := s.Get(ctx, Path(entityPath))
	if errors.Is(err, coord.ErrNoNode) {
		return map[string]string{}, -1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	cfg, err := Decode(entityPath, data)
	return cfg, st.Version, err
}

// Update reads an entity's config, lets edit change it (an error from edit
// is returned as is and nothing is written) and writes it back with a
// compare-and-set, then the change notification, as Kafka's
// AdminZkClient.changeConfigs does. A concurrent write makes it read and
// edit again. A malformed node is read as empty only if
// replaceMalformed; otherwise its error is returned. It returns the config
// written.
func Update(ctx context.Context, s coord.Session, entityPath string, replaceMalformed bool, edit func(cfg map[string]string) error) (map[string]string, error) {
	for range casAttempts {
		cur, version, err := Read(ctx, s, entityPath)
		if errors.Is(err, ErrMalformed) && replaceMalformed {
			cur, err = map[string]string{}, nil
		}
		if err != nil {
			return nil, err
		}
		cfg := maps.Clone(cur)
		if err := edit(cfg); err != nil {
			return nil, err
		}
		if version < 0 {
			_, err = s.CreateAll(ctx, Path(entityPath), Encode(cfg), coord.Persistent)
		} else {
			_, err = s.Set(ctx, Path(entityPath), Encode(cfg), version)
		}
		if errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNoNode) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := Notify(ctx, s, entityPath); err != nil {
			return nil, err
		}
		return cfg, nil
	}
	return nil, fmt.Errorf("entityconfig: %s changed concurrently %d times: %w", entityPath, casAttempts, coord.ErrBadVersion)
}

// Notify writes Kafka's change notification for entityPath.
func Notify(ctx context.Context, s coord.Session, entityPath string) error {
	data, _ := json.Marshal(struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
	}{changeVersion, entityPath})
	if _, err := s.CreateAll(ctx, coord.Join(ChangesPath, ChangePrefix), data, coord.PersistentSequential); err != nil {
		return fmt.Errorf("entityconfig: writing the change notification of %s: %w", entityPath, err)
	}
	return nil
}

// Follow arms the watch on /config/changes, calls load, and then calls
// changed with the entity path of every newer notification, in sequence
// order, until ctx ends, the session is lost (coord.ErrSessionExpired) or
// a callback fails (its error is returned). Unreadable notifications and
// ones purged before they were read are skipped, as Kafka's brokers do.
func Follow(ctx context.Context, s coord.Session, load func(ctx context.Context) error, changed func(ctx context.Context, entityPath string) error) error {
	if _, err := s.CreateAll(ctx, ChangesPath, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return fmt.Errorf("creating %s: %w", ChangesPath, err)
	}
	names, _, watch, err := s.ChildrenW(ctx, ChangesPath)
	if err != nil {
		return err
	}
	last := maxSeq(names, -1)
	if err := load(ctx); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-watch:
			if ev.Type == coord.EventSessionLost {
				return coord.ErrSessionExpired
			}
		}
		if names, _, watch, err = s.ChildrenW(ctx, ChangesPath); err != nil {
			return err
		}
		slices.SortFunc(names, func(a, b string) int { return int(seq(a) - seq(b)) })
		for _, n := range names {
			sq := seq(n)
			if sq <= last {
				continue
			}
			path, err := readChange(ctx, s, n)
			if err != nil {
				return err
			}
			if path != "" {
				if err := changed(ctx, path); err != nil {
					return err
				}
			}
			last = sq
		}
	}
}

// readChange returns the entity path of a notification, "" for one that
// is gone or unreadable.
func readChange(ctx context.Context, s coord.Session, name string) (string, error) {
	data, _, err := s.Get(ctx, coord.Join(ChangesPath, name))
	if errors.Is(err, coord.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var n struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
	}
	if json.Unmarshal(data, &n) != nil || n.Version != changeVersion {
		return "", nil
	}
	return n.EntityPath, nil
}

func seq(name string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(name, ChangePrefix), 10, 64)
	if err != nil || !strings.HasPrefix(name, ChangePrefix) {
		return -1
	}
	return n
}

func maxSeq(names []string, from int64) int64 {
	for _, n := range names {
		from = max(from, seq(n))
	}
	return from
}
