package acl

import (
	"fmt"
	"testing"
)

func lit(t ResourceType, name string) Pattern { return Pattern{t, name, PatternLiteral} }
func pre(t ResourceType, name string) Pattern { return Pattern{t, name, PatternPrefixed} }

func allow(principal string, op Operation) Entry {
	return Entry{Principal: principal, Host: Wildcard, Operation: op, Permission: Allow}
}

func deny(principal string, op Operation) Entry {
	return Entry{Principal: principal, Host: Wildcard, Operation: op, Permission: Deny}
}

// TestAuthorizeDecisionTable: Kafka's AclAuthorizer decisions, one row per
// rule (deny wins, implied operations, wildcard names and principals,
// prefixes, hosts, super users, allow.everyone.if.no.acl.found).
func TestAuthorizeDecisionTable(t *testing.T) {
	type row struct {
		name      string
		cfg       Config
		acls      map[Pattern][]Entry
		principal string
		host      string
		op        Operation
		rt        ResourceType
		resource  string
		want      bool
	}
	alice, bob := "User:alice", "User:bob"
	rows := []row{
		{name: "no ACLs, default closed", principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "no ACLs, allow.everyone", cfg: Config{AllowEveryoneIfNoACL: true}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "ACLs exist for another principal, allow.everyone does not apply", cfg: Config{AllowEveryoneIfNoACL: true},
			acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(bob, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "literal allow", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "literal allow is not another topic's", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "u", want: false},
		{name: "same name, other resource type", acls: map[Pattern][]Entry{lit(ResourceGroup, "t"): {allow(alice, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "allow of another operation", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpWrite)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "deny overrides allow", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead), deny(alice, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "wildcard deny overrides literal allow", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead)}, lit(ResourceTopic, "*"): {deny(WildcardPrincipal, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "prefixed deny overrides literal allow", acls: map[Pattern][]Entry{lit(ResourceTopic, "secret-t"): {allow(alice, OpRead)}, pre(ResourceTopic, "secret-"): {deny(alice, OpAll)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "secret-t", want: false},
		{name: "deny All denies Read", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead), deny(alice, OpAll)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "deny Describe does not deny Read", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead), deny(alice, OpDescribe)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "deny of another principal", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead), deny(bob, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "allow All", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpAll)}}, principal: alice, op: OpDelete, rt: ResourceTopic, resource: "t", want: true},
		{name: "Read implies Describe", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead)}}, principal: alice, op: OpDescribe, rt: ResourceTopic, resource: "t", want: true},
		{name: "Write implies Describe", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpWrite)}}, principal: alice, op: OpDescribe, rt: ResourceTopic, resource: "t", want: true},
		{name: "Delete implies Describe", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpDelete)}}, principal: alice, op: OpDescribe, rt: ResourceTopic, resource: "t", want: true},
		{name: "Alter implies Describe", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpAlter)}}, principal: alice, op: OpDescribe, rt: ResourceTopic, resource: "t", want: true},
		{name: "Create does not imply Describe", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpCreate)}}, principal: alice, op: OpDescribe, rt: ResourceTopic, resource: "t", want: false},
		{name: "Describe does not imply Read", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpDescribe)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "AlterConfigs implies DescribeConfigs", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpAlterConfigs)}}, principal: alice, op: OpDescribeConfigs, rt: ResourceTopic, resource: "t", want: true},
		{name: "DescribeConfigs does not imply AlterConfigs", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpDescribeConfigs)}}, principal: alice, op: OpAlterConfigs, rt: ResourceTopic, resource: "t", want: false},
		{name: "Read does not imply DescribeConfigs", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead)}}, principal: alice, op: OpDescribeConfigs, rt: ResourceTopic, resource: "t", want: false},
		{name: "wildcard resource", acls: map[Pattern][]Entry{lit(ResourceTopic, "*"): {allow(alice, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "anything", want: true},
		{name: "wildcard principal", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(WildcardPrincipal, OpRead)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "prefixed allow covers a new name", acls: map[Pattern][]Entry{pre(ResourceTopic, "logs-"): {allow(alice, OpWrite)}}, principal: alice, op: OpWrite, rt: ResourceTopic, resource: "logs-2024", want: true},
		{name: "prefixed allow, equal name", acls: map[Pattern][]Entry{pre(ResourceTopic, "logs"): {allow(alice, OpWrite)}}, principal: alice, op: OpWrite, rt: ResourceTopic, resource: "logs", want: true},
		{name: "prefixed allow, shorter name", acls: map[Pattern][]Entry{pre(ResourceTopic, "logs-"): {allow(alice, OpWrite)}}, principal: alice, op: OpWrite, rt: ResourceTopic, resource: "logs", want: false},
		{name: "prefixed is not a wildcard", acls: map[Pattern][]Entry{pre(ResourceTopic, "*"): {allow(alice, OpWrite)}}, principal: alice, op: OpWrite, rt: ResourceTopic, resource: "logs", want: false},
		{name: "host matches", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {{Principal: alice, Host: "10.0.0.1", Operation: OpRead, Permission: Allow}}}, principal: alice, host: "10.0.0.1", op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "host differs", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {{Principal: alice, Host: "10.0.0.1", Operation: OpRead, Permission: Allow}}}, principal: alice, host: "10.0.0.2", op: OpRead, rt: ResourceTopic, resource: "t", want: false},
		{name: "deny from one host only", acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead), {Principal: alice, Host: "10.0.0.9", Operation: OpRead, Permission: Deny}}}, principal: alice, host: "10.0.0.1", op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "super user bypasses deny", cfg: Config{SuperUsers: []string{alice}}, acls: map[Pattern][]Entry{lit(ResourceTopic, "t"): {deny(alice, OpAll)}}, principal: alice, op: OpRead, rt: ResourceTopic, resource: "t", want: true},
		{name: "super user, no ACLs", cfg: Config{SuperUsers: []string{alice}}, principal: alice, op: OpClusterAction, rt: ResourceCluster, resource: ClusterName, want: true},
		{name: "cluster action", acls: map[Pattern][]Entry{lit(ResourceCluster, ClusterName): {allow(alice, OpClusterAction)}}, principal: alice, op: OpClusterAction, rt: ResourceCluster, resource: ClusterName, want: true},
		{name: "transactional id prefix", acls: map[Pattern][]Entry{pre(ResourceTransactionalID, "app-"): {allow(alice, OpWrite)}}, principal: alice, op: OpWrite, rt: ResourceTransactionalID, resource: "app-1", want: true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			a := New(r.cfg)
			a.Replace(r.acls)
			host := r.host
			if host == "" {
				host = "127.0.0.1"
			}
			if got := a.Authorize(r.principal, host, r.op, r.rt, r.resource); got != r.want {
				t.Fatalf("Authorize(%s, %s, %s, %s:%s) = %v, want %v", r.principal, host, r.op, r.rt, r.resource, got, r.want)
			}
		})
	}
}

// TestAuthorizeAny: InitProducerId's Write-on-any-topic rule
// (authorizeByResourceType).
func TestAuthorizeAny(t *testing.T) {
	alice := "User:alice"
	cases := []struct {
		name string
		acls map[Pattern][]Entry
		want bool
	}{
		{"none", nil, false},
		{"literal", map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpWrite)}}, true},
		{"literal denied", map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpWrite), deny(alice, OpWrite)}}, false},
		{"literal under a deny prefix", map[Pattern][]Entry{lit(ResourceTopic, "ab"): {allow(alice, OpWrite)}, pre(ResourceTopic, "a"): {deny(alice, OpWrite)}}, false},
		{"prefix", map[Pattern][]Entry{pre(ResourceTopic, "ab"): {allow(alice, OpWrite)}}, true},
		{"wildcard deny", map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpWrite)}, lit(ResourceTopic, "*"): {deny(alice, OpWrite)}}, false},
		{"read only", map[Pattern][]Entry{lit(ResourceTopic, "t"): {allow(alice, OpRead)}}, false},
		{"wildcard allow", map[Pattern][]Entry{lit(ResourceTopic, "*"): {allow(WildcardPrincipal, OpWrite)}}, true},
	}
	for _, c := range cases {
		a := New(Config{})
		a.Replace(c.acls)
		if got := a.AuthorizeAny(alice, "127.0.0.1", OpWrite, ResourceTopic); got != c.want {
			t.Errorf("%s: AuthorizeAny = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestPrefixIndexFollowsRemovals: the prefix-length index forgets a length
// once its last prefix is gone, and keeps it while another remains.
func TestPrefixIndexFollowsRemovals(t *testing.T) {
	alice := "User:alice"
	a := New(Config{})
	a.Set(pre(ResourceTopic, "ab"), []Entry{allow(alice, OpRead)})
	a.Set(pre(ResourceTopic, "cd"), []Entry{allow(alice, OpRead)})
	a.Set(pre(ResourceTopic, "ab"), nil)
	if a.Authorize(alice, "h", OpRead, ResourceTopic, "abc") || !a.Authorize(alice, "h", OpRead, ResourceTopic, "cde") {
		t.Fatal("after removing ab: abc must be denied, cde allowed")
	}
	a.Set(pre(ResourceTopic, "cd"), nil)
	if n := len(a.lens[ResourceTopic]); n != 0 {
		t.Fatalf("%d prefix lengths left, want 0", n)
	}
}

// TestFilters: DescribeAcls/DeleteAcls filters (ANY, MATCH, exact pattern
// types, nil strings).
func TestFilters(t *testing.T) {
	s := func(v string) *string { return &v }
	a := New(Config{})
	a.Replace(map[Pattern][]Entry{
		lit(ResourceTopic, "foo"):    {allow("User:a", OpRead)},
		lit(ResourceTopic, "*"):      {allow("User:b", OpRead)},
		pre(ResourceTopic, "fo"):     {deny("User:c", OpWrite)},
		pre(ResourceTopic, "foo"):    {allow("User:d", OpWrite)},
		lit(ResourceGroup, "foo"):    {allow("User:a", OpRead)},
		pre(ResourceTopic, "bar"):    {allow("User:e", OpRead)},
		lit(ResourceTopic, "foobar"): {allow("User:f", OpRead)},
	})
	all := Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}
	cases := []struct {
		name string
		f    func(Filter) Filter
		want int
	}{
		{"everything", func(f Filter) Filter { return f }, 7},
		{"topics", func(f Filter) Filter { f.Type = ResourceTopic; return f }, 6},
		{"any foo", func(f Filter) Filter { f.Name = s("foo"); return f }, 3},
		{"literal foo", func(f Filter) Filter { f.Name, f.Pattern = s("foo"), PatternLiteral; return f }, 2},
		{"prefixed", func(f Filter) Filter { f.Pattern = PatternPrefixed; return f }, 3},
		{"match foo", func(f Filter) Filter { f.Type, f.Name, f.Pattern = ResourceTopic, s("foo"), PatternMatch; return f }, 4},
		{"principal", func(f Filter) Filter { f.Principal = s("User:a"); return f }, 2},
		{"deny", func(f Filter) Filter { f.Permission = Deny; return f }, 1},
		{"write", func(f Filter) Filter { f.Operation = OpWrite; return f }, 2},
		{"host", func(f Filter) Filter { f.Host = s("10.1.1.1"); return f }, 0},
	}
	for _, c := range cases {
		got := a.Bindings(c.f(all))
		if len(got) != c.want {
			t.Errorf("%s: %d bindings %v, want %d", c.name, len(got), got, c.want)
		}
	}
}

func TestBindingValidate(t *testing.T) {
	good := Binding{lit(ResourceTopic, "t"), allow("User:a", OpRead)}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Binding{
		{Pattern{ResourceAny, "t", PatternLiteral}, allow("User:a", OpRead)},
		{Pattern{ResourceTopic, "t", PatternMatch}, allow("User:a", OpRead)},
		{lit(ResourceTopic, ""), allow("User:a", OpRead)},
		{lit(ResourceCluster, "c"), allow("User:a", OpRead)},
		{lit(ResourceTopic, "t"), allow("alice", OpRead)},
		{lit(ResourceTopic, "t"), allow("User:a", OpAny)},
		{lit(ResourceTopic, "t"), Entry{Principal: "User:a", Host: "*", Operation: OpRead, Permission: PermissionAny}},
	}
	for _, b := range bad {
		if err := b.Validate(); err == nil {
			t.Errorf("%v validated", b)
		}
	}
}

func TestNamesRoundTrip(t *testing.T) {
	for _, rt := range ResourceTypes() {
		for _, s := range []string{rt.String(), rt.enumName()} {
			if got, err := ParseResourceType(s); err != nil || got != rt {
				t.Errorf("ParseResourceType(%q) = %v, %v", s, got, err)
			}
		}
	}
	for op := OpAll; op <= OpIdempotentWrite; op++ {
		if got, err := ParseOperation(op.String()); err != nil || got != op {
			t.Errorf("ParseOperation(%q) = %v, %v", op, got, err)
		}
	}
	if got := ParseSuperUsers(" User:a ; User:CN=x,O=y;;"); fmt.Sprint(got) != "[User:a User:CN=x,O=y]" {
		t.Errorf("ParseSuperUsers = %q", got)
	}
}

// BenchmarkAuthorize: one decision against 10,000 ACLs (literal topics,
// prefixes of several lengths, a wildcard), the per-request cost the
// broker pays.
func BenchmarkAuthorize(b *testing.B) {
	a := New(Config{})
	all := map[Pattern][]Entry{}
	for i := range 9000 {
		all[lit(ResourceTopic, fmt.Sprintf("topic-%d", i))] = []Entry{allow(fmt.Sprintf("User:u%d", i%100), OpWrite)}
	}
	for i := range 999 {
		all[pre(ResourceTopic, fmt.Sprintf("p%d-", i))] = []Entry{allow("User:other", OpRead)}
	}
	all[lit(ResourceTopic, "*")] = []Entry{deny("User:banned", OpAll)}
	a.Replace(all)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !a.Authorize("User:u42", "10.0.0.1", OpWrite, ResourceTopic, "topic-4242") {
			b.Fatal("denied")
		}
	}
}
