package acl

import (
	"slices"
	"strings"
	"sync"
)

// Config is an Authorizer's settings.
type Config struct {
	// SuperUsers are allowed everything, whatever the ACLs say
	// (super.users, parsed by ParseSuperUsers).
	SuperUsers []string
	// AllowEveryoneIfNoACL is allow.everyone.if.no.acl.found: a resource
	// no ACL applies to is open to all (default false: closed).
	AllowEveryoneIfNoACL bool
}

// ParseSuperUsers reads super.users: principals separated by semicolons
// (a principal's name may contain commas), blanks around them dropped.
func ParseSuperUsers(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Authorizer decides requests from a cache of every ACL, with Kafka's
// AclAuthorizer semantics (see doc.go). The cache is filled by a Store (or
// directly with Set, in tests). Safe for concurrent use: decisions take a
// read lock and allocate nothing.
type Authorizer struct {
	super       map[string]bool
	allowIfNone bool

	mu sync.RWMutex
	// literal and prefixed hold the entries of each pattern; prefixLens,
	// by resource type, the distinct lengths of its prefixed names with
	// their counts, and lens those lengths sorted, so that a decision
	// looks up each candidate prefix of a name instead of every prefix.
	literal    map[Pattern][]Entry
	prefixed   map[Pattern][]Entry
	prefixLens map[ResourceType]map[int]int
	lens       map[ResourceType][]int
	gen        uint64
	changed    chan struct{}
}

// New returns an Authorizer with no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNone: cfg.AllowEveryoneIfNoACL,
		literal: map[Pattern][]Entry{}, prefixed: map[Pattern][]Entry{},
		prefixLens: map[ResourceType]map[int]int{}, lens: map[ResourceType][]int{},
		changed: make(chan struct{})}
	for _, u := range cfg.SuperUsers {
		a.super[u] = true
	}
	return a
}

// IsSuperUser reports whether principal is one of super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// Authorize decides whether principal, connected from host (an IP
// address), may do op on the resource of type t named name: a super user
// may; otherwise, if no ACL applies to the resource (literal name,
// literal "*", or a prefix of the name), allow.everyone.if.no.acl.found
// decides; otherwise a matching Deny refuses, and a matching Allow of op
// (or of an operation implying it, or All) permits.
func (a *Authorizer) Authorize(principal, host string, op Operation, t ResourceType, name string) bool {
	if a.super[principal] {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	found, denied, allowed := false, false, false
	check := func(entries []Entry) {
		if len(entries) > 0 {
			found = true
		}
		for i := range entries {
			e := &entries[i]
			if (e.Principal != principal && e.Principal != WildcardPrincipal) || (e.Host != host && e.Host != Wildcard) {
				continue
			}
			if e.Permission == Deny {
				if e.Operation == op || e.Operation == OpAll {
					denied = true
				}
			} else if e.Operation == OpAll || implies(e.Operation, op) {
				allowed = true
			}
		}
	}
	check(a.literal[Pattern{t, name, PatternLiteral}])
	if name != Wildcard {
		check(a.literal[Pattern{t, Wildcard, PatternLiteral}])
	}
	for _, n := range a.lens[t] {
		if n > len(name) {
			break
		}
		check(a.prefixed[Pattern{t, name[:n], PatternPrefixed}])
	}
	if !found {
		return a.allowIfNone
	}
	return !denied && allowed
}

// implies reports whether an Allow of granted permits op: Read, Write,
// Delete and Alter imply Describe; AlterConfigs implies DescribeConfigs.
func implies(granted, op Operation) bool {
	if granted == op {
		return true
	}
	switch op {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// AuthorizeAny reports whether principal may do op on at least one
// resource of type t, as Kafka's Authorizer.authorizeByResourceType
// (InitProducerId accepts Write on any topic in place of IdempotentWrite):
// a super user, or a resource the ACLs leave open, may; else an Allow of op
// (or All) on a literal name that no Deny of the same name, literal "*" or
// a prefix covers, or on a prefix that no Deny prefix of it covers.
func (a *Authorizer) AuthorizeAny(principal, host string, op Operation, t ResourceType) bool {
	if a.Authorize(principal, host, op, t, "hardcode") {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	match := func(e Entry, perm Permission) bool {
		return e.Permission == perm && (e.Principal == principal || e.Principal == WildcardPrincipal) &&
			(e.Host == host || e.Host == Wildcard) && (e.Operation == op || e.Operation == OpAll)
	}
	denyLiteral, denyPrefix := map[string]bool{}, []string{}
	for p, entries := range a.literal {
		if p.Type == t && slices.ContainsFunc(entries, func(e Entry) bool { return match(e, Deny) }) {
			denyLiteral[p.Name] = true
		}
	}
	for p, entries := range a.prefixed {
		if p.Type == t && slices.ContainsFunc(entries, func(e Entry) bool { return match(e, Deny) }) {
			denyPrefix = append(denyPrefix, p.Name)
		}
	}
	if denyLiteral[Wildcard] {
		return false
	}
	coveredByDenyPrefix := func(name string) bool {
		return slices.ContainsFunc(denyPrefix, func(d string) bool { return strings.HasPrefix(name, d) })
	}
	for p, entries := range a.prefixed {
		if p.Type == t && slices.ContainsFunc(entries, func(e Entry) bool { return match(e, Allow) }) && !coveredByDenyPrefix(p.Name) {
			return true
		}
	}
	for p, entries := range a.literal {
		if p.Type == t && slices.ContainsFunc(entries, func(e Entry) bool { return match(e, Allow) }) &&
			!denyLiteral[p.Name] && !coveredByDenyPrefix(p.Name) {
			return true
		}
	}
	return false
}

// Set replaces the entries of one pattern in the cache (none removes it).
func (a *Authorizer) Set(p Pattern, entries []Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setLocked(p, entries)
	a.bumpLocked()
}

// Replace replaces the whole cache.
func (a *Authorizer) Replace(all map[Pattern][]Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.literal, a.prefixed = map[Pattern][]Entry{}, map[Pattern][]Entry{}
	a.prefixLens, a.lens = map[ResourceType]map[int]int{}, map[ResourceType][]int{}
	for p, e := range all {
		a.setLocked(p, e)
	}
	a.bumpLocked()
}

func (a *Authorizer) setLocked(p Pattern, entries []Entry) {
	entries = slices.Clone(entries)
	if p.Pattern == PatternLiteral {
		if len(entries) == 0 {
			delete(a.literal, p)
		} else {
			a.literal[p] = entries
		}
		return
	}
	if p.Pattern != PatternPrefixed {
		return
	}
	_, had := a.prefixed[p]
	counts := a.prefixLens[p.Type]
	if counts == nil {
		counts = map[int]int{}
		a.prefixLens[p.Type] = counts
	}
	switch {
	case len(entries) == 0 && had:
		delete(a.prefixed, p)
		if counts[len(p.Name)]--; counts[len(p.Name)] == 0 {
			delete(counts, len(p.Name))
		}
	case len(entries) == 0:
		return
	default:
		if !had {
			counts[len(p.Name)]++
		}
		a.prefixed[p] = entries
	}
	lens := make([]int, 0, len(counts))
	for n := range counts {
		lens = append(lens, n)
	}
	slices.Sort(lens)
	a.lens[p.Type] = lens
}

func (a *Authorizer) bumpLocked() {
	a.gen++
	close(a.changed)
	a.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change of the cache, and
// the number of changes so far; for waiting on a notification.
func (a *Authorizer) Changed() (<-chan struct{}, uint64) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.changed, a.gen
}

// Bindings lists the cached bindings f selects, sorted by pattern and then
// entry, for DescribeAcls.
func (a *Authorizer) Bindings(f Filter) []Binding {
	a.mu.RLock()
	var out []Binding
	for _, m := range []map[Pattern][]Entry{a.literal, a.prefixed} {
		for p, entries := range m {
			for _, e := range entries {
				if b := (Binding{p, e}); f.Matches(b) {
					out = append(out, b)
				}
			}
		}
	}
	a.mu.RUnlock()
	SortBindings(out)
	return out
}

// Entries returns the cached entries of one pattern.
func (a *Authorizer) Entries(p Pattern) []Entry {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if p.Pattern == PatternPrefixed {
		return slices.Clone(a.prefixed[p])
	}
	return slices.Clone(a.literal[p])
}

// SortBindings orders bindings by type, pattern type, name, principal,
// host, operation and permission.
func SortBindings(bs []Binding) {
	slices.SortFunc(bs, func(x, y Binding) int {
		if c := int(x.Pattern.Type) - int(y.Pattern.Type); c != 0 {
			return c
		}
		if c := int(x.Pattern.Pattern) - int(y.Pattern.Pattern); c != 0 {
			return c
		}
		if c := strings.Compare(x.Pattern.Name, y.Pattern.Name); c != 0 {
			return c
		}
		return compareEntries(x.Entry, y.Entry)
	})
}

func compareEntries(x, y Entry) int {
	if c := strings.Compare(x.Principal, y.Principal); c != 0 {
		return c
	}
	if c := strings.Compare(x.Host, y.Host); c != 0 {
		return c
	}
	if c := int(x.Operation) - int(y.Operation); c != 0 {
		return c
	}
	return int(x.Permission) - int(y.Permission)
}
