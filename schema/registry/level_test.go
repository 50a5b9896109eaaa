package registry

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/testkit/testenv"
)

func recordOf(fields string) string {
	return fmt.Sprintf(`{"type":"record","name":"Ev","namespace":"t","fields":[%s]}`, fields)
}

// TestLevelsMatrix registers a history with NONE, sets a level and
// registers one more schema; each level must accept or refuse it, and the
// all-versions compatibility check must agree.
func TestLevelsMatrix(t *testing.T) {
	var (
		a  = recordOf(`{"name":"a","type":"int"}`)
		b  = recordOf(`{"name":"a","type":"int"},{"name":"b","type":"string","default":""}`) // field added with default
		c  = recordOf(`{"name":"a","type":"int"},{"name":"c","type":"int"}`)                 // field added without default
		d  = recordOf(``)                                                                    // field removed (it had no default)
		e  = recordOf(`{"name":"a","type":"long"}`)                                          // int promoted to long
		n  = recordOf(`{"name":"a","type":"string","default":"x"}`)                          // reads d, not a
		n2 = recordOf(`{"name":"z","type":"int"}`)                                           // d reads it, a does not
		n3 = recordOf(`{"name":"z","type":"int","default":0}`)                               // full with d, not with a
		b2 = recordOf(`{"name":"a","type":"int"},{"name":"b","type":"string","default":""},{"name":"x","type":"int","default":1}`)
	)
	cases := []struct {
		level      Level
		history    []string
		softDelete int // version to soft-delete before the check, 0 for none
		next       string
		ok         bool
	}{
		{Backward, []string{a}, 0, b, true},
		{Backward, []string{a}, 0, c, false},
		{Backward, []string{a}, 0, d, true},
		{Backward, []string{a}, 0, e, true},
		{Forward, []string{a}, 0, b, true},
		{Forward, []string{a}, 0, c, true},
		{Forward, []string{a}, 0, d, false},
		{Forward, []string{a}, 0, e, false},
		{Full, []string{a}, 0, b, true},
		{Full, []string{a}, 0, c, false},
		{Full, []string{a}, 0, d, false},
		{Full, []string{a}, 0, e, false},
		{None, []string{a}, 0, c, true},
		{None, []string{a}, 0, `"string"`, true},
		{Backward, []string{a, d}, 0, n, true},
		{BackwardTransitive, []string{a, d}, 0, n, false},
		{BackwardTransitive, []string{a, d}, 1, n, true}, // soft-deleted versions do not count
		{BackwardTransitive, []string{a, b}, 0, b2, true},
		{Forward, []string{a, d}, 0, n2, true},
		{ForwardTransitive, []string{a, d}, 0, n2, false},
		{ForwardTransitive, []string{a, b}, 0, b2, true},
		{Full, []string{a, d}, 0, n3, true},
		{FullTransitive, []string{a, d}, 0, n3, false},
		{FullTransitive, []string{a, b}, 0, b2, true},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%d_%s", i, tc.level), func(t *testing.T) {
			ctx := testenv.Context(t, 30*time.Second)
			reg, err := New(newMemStore(t), Config{})
			must(t, err)
			must(t, reg.store.SetCompatibility(ctx, "s", None))
			for _, h := range tc.history {
				if _, err := reg.Register(ctx, "s", SchemaInput{Schema: h}, false); err != nil {
					t.Fatalf("history: %v", err)
				}
			}
			if tc.softDelete > 0 {
				if _, err := reg.DeleteVersion(ctx, "s", fmt.Sprint(tc.softDelete), false); err != nil {
					t.Fatal(err)
				}
			}
			must(t, reg.store.SetCompatibility(ctx, "s", tc.level))
			// The all-versions check is the registration's; latest
			// checks the newest live version alone.
			problems, err := reg.CheckCompatibilityAll(ctx, "s", SchemaInput{Schema: tc.next, SchemaType: "AVRO"})
			must(t, err)
			if (len(problems) == 0) != tc.ok {
				t.Fatalf("compatibility endpoint, all versions: problems %q, want ok=%v", problems, tc.ok)
			}
			_, err = reg.Register(ctx, "s", SchemaInput{Schema: tc.next}, false)
			if tc.ok && err != nil {
				t.Fatalf("Register: %v, want success", err)
			}
			if !tc.ok && !errors.Is(err, ErrIncompatible) {
				t.Fatalf("Register: %v, want ErrIncompatible", err)
			}
		})
	}
}

func TestDefaultLevelConfig(t *testing.T) {
	ctx := testenv.Context(t, 30*time.Second)
	reg, err := New(newMemStore(t), Config{DefaultCompatibility: None})
	must(t, err)
	if l, _ := reg.Level(ctx, "x"); l != None {
		t.Fatalf("level %q, want the configured default NONE", l)
	}
	if _, err := New(newMemStore(t), Config{DefaultCompatibility: "SOMETIMES"}); !errors.Is(err, ErrInvalidCompatibility) {
		t.Fatalf("bad default accepted: %v", err)
	}
}
