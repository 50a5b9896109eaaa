package compact

import (
	"encoding/hex"
	"math/big"
	"strings"
	"testing"
)

func TestDecimalEncoding(t *testing.T) {
	cases := []struct {
		rat         *big.Rat
		scale, size int
		want        string
	}{
		{big.NewRat(1234, 100), 2, 0, "04d2"},
		{big.NewRat(-15, 10), 1, 0, "f1"},
		{big.NewRat(-15, 10), 1, 4, "fffffff1"},
		{big.NewRat(128, 1), 0, 0, "0080"},
		{big.NewRat(-128, 1), 0, 0, "ff80"},
		{big.NewRat(0, 1), 3, 2, "0000"},
		{big.NewRat(255, 1), 0, 3, "0000ff"},
	}
	for _, c := range cases {
		v, err := decimalConv(c.scale, c.size)(c.rat)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString([]byte(v.(string))); got != c.want {
			t.Errorf("%v scale %d size %d: %s, want %s", c.rat, c.scale, c.size, got, c.want)
		}
	}
	if _, err := decimalConv(0, 1)(big.NewRat(1000, 1)); err == nil {
		t.Error("a decimal too large for its fixed size was accepted")
	}
}

func TestMappingRejectsWhatParquetCannotHold(t *testing.T) {
	c := &Compactor{}
	for schema, want := range map[string]string{
		`"string"`: "not a record",
		`{"type":"record","name":"E","fields":[]}`:                                                             "no fields",
		`{"type":"record","name":"N","fields":[{"name":"n","type":"N"}]}`:                                      "too deeply",
		`{"type":"record","name":"U","fields":[{"name":"u","type":["null"]}]}`:                                 "only null",
		`{"type":"record","name":"D","fields":[{"name":"d","type":{"type":"bytes","logicalType":"decimal"}}]}`: "precision",
	} {
		_, _, err := c.mapping(schema)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", schema, err, want)
		}
	}
}
