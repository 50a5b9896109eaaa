package quota

import (
	"testing"
)

func storeWith(q map[Entity]Values) *Store {
	s := &Store{quotas: q, change: make(chan struct{})}
	s.any.Store(len(q) > 0)
	return s
}

func TestLimitPrecedence(t *testing.T) {
	u, c := Named("alice"), Named("loader")
	all := []struct {
		e     Entity
		limit float64
		tags  Tags
	}{
		{Entity{User: u, Client: c}, 1, Tags{"alice", "loader"}},
		{Entity{User: u, Client: DefaultName}, 2, Tags{"alice", "loader"}},
		{Entity{User: u}, 3, Tags{"alice", ""}},
		{Entity{User: DefaultName, Client: c}, 4, Tags{"alice", "loader"}},
		{Entity{User: DefaultName, Client: DefaultName}, 5, Tags{"alice", "loader"}},
		{Entity{User: DefaultName}, 6, Tags{"alice", ""}},
		{Entity{Client: c}, 7, Tags{"", "loader"}},
		{Entity{Client: DefaultName}, 8, Tags{"", "loader"}},
	}
	// Remove the most specific entity one at a time: the next one wins.
	for i := range all {
		q := map[Entity]Values{}
		for _, x := range all[i:] {
			q[x.e] = Values{ProducerByteRate: x.limit}
		}
		// A more specific entity with another key does not shadow.
		q[Entity{User: u, Client: c}] = merge(q[Entity{User: u, Client: c}], Values{ConsumerByteRate: 99})
		s := storeWith(q)
		limit, tags, ok := s.Limit(ProducerByteRate, "alice", "loader")
		if !ok || limit != all[i].limit || tags != all[i].tags {
			t.Errorf("from level %d: got %v %+v %v, want %v %+v", i+1, limit, tags, ok, all[i].limit, all[i].tags)
		}
	}
	s := storeWith(map[Entity]Values{{Client: c}: {ProducerByteRate: 7}})
	if _, _, ok := s.Limit(ProducerByteRate, "alice", "other"); ok {
		t.Error("client quota of loader applied to client other")
	}
	if _, _, ok := storeWith(nil).Limit(ProducerByteRate, "alice", "loader"); ok {
		t.Error("quota found in an empty store")
	}
}

func merge(a, b Values) Values {
	out := Values{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestEntityPathRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		e    Entity
		path string
	}{
		{Entity{User: Named("CN=a b*")}, "users/CN%3Da%20b%2A"},
		{Entity{User: DefaultName, Client: Named("loader")}, "users/<default>/clients/loader"},
		{Entity{Client: DefaultName}, "clients/<default>"},
		{Entity{Client: Named("<default>")}, "clients/%3Cdefault%3E"},
	} {
		if got := tc.e.Path(); got != tc.path {
			t.Errorf("%+v: path %q, want %q", tc.e, got, tc.path)
		}
		back, ok := ParsePath(tc.path)
		if !ok || back != tc.e {
			t.Errorf("ParsePath(%q) = %+v %v, want %+v", tc.path, back, ok, tc.e)
		}
	}
	for _, p := range []string{"topics/t", "brokers/1", "users/", "users/a/clients", "clients/a/b"} {
		if _, ok := ParsePath(p); ok {
			t.Errorf("ParsePath(%q) accepted", p)
		}
	}
}

func TestValidateValue(t *testing.T) {
	for _, tc := range []struct {
		key string
		v   float64
		ok  bool
	}{
		{ProducerByteRate, 1048576, true},
		{ProducerByteRate, -1, false},
		{ProducerByteRate, 1.5, false},
		{RequestPercentage, 12.5, true},
		{ControllerMutationRate, -0.1, false},
		{"producer_byte_rat", 1, false},
	} {
		if err := ValidateValue(tc.key, tc.v); (err == nil) != tc.ok {
			t.Errorf("%s=%v: err %v", tc.key, tc.v, err)
		}
	}
}
