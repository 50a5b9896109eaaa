package hours

import (
	"errors"
	"testing"
)

func TestLoaderFileRoundTrip(t *testing.T) {
	for _, f := range []LoaderFile{
		{Topic: "pageviews", Partition: 0, First: 0, Last: 0, SchemaID: 1, Format: Avro},
		{Topic: "a.b-c_d", Partition: 2147483647, First: 5, Last: 9223372036854775807, SchemaID: 4294967295, Format: Avro},
		{Topic: "pv", Partition: 3, First: 100, Last: 199, SchemaID: 7, Format: Parquet},
	} {
		name := f.Name()
		got, err := ParseLoaderFile(name)
		if err != nil || got != f {
			t.Errorf("ParseLoaderFile(%q) = %+v, %v; want %+v", name, got, err, f)
		}
		if _, err := ParseCompactedFile(name); !errors.Is(err, ErrNotCompactedFile) {
			t.Errorf("ParseCompactedFile(%q) = %v, want ErrNotCompactedFile", name, err)
		}
	}
	if got := (LoaderFile{Topic: "pv", Partition: 1, First: 2, Last: 3, SchemaID: 4, Format: Avro}).Name(); got != "pv+1+2+3+s4.avro" {
		t.Errorf("name %q, want pv+1+2+3+s4.avro (frozen)", got)
	}
	for _, bad := range []string{"", "pv.avro", "pv+1+2+3+s4", "pv+1+2+3+s4.json", "pv+1+2+3+4.avro", "+1+2+3+s4.avro",
		"pv+x+2+3+s4.avro", "pv+1+3+2+s4.avro", "pv+-1+2+3+s4.avro", "pv+01+2+3+s4.avro", "pv+1+2+3+s4+5.avro",
		"a+b+1+2+3+s4.avro", "pv+s4+000.parquet", "_pv+1+2+3+s4.avro.tmp"} {
		if f, err := ParseLoaderFile(bad); !errors.Is(err, ErrNotLoaderFile) {
			t.Errorf("ParseLoaderFile(%q) = %+v, %v; want ErrNotLoaderFile", bad, f, err)
		}
	}
}

func TestCompactedFileRoundTrip(t *testing.T) {
	for _, f := range []CompactedFile{{Topic: "pv", SchemaID: 7, Seq: 0}, {Topic: "a.b-c", SchemaID: 4294967295, Seq: 1234}} {
		name := f.Name()
		got, err := ParseCompactedFile(name)
		if err != nil || got != f {
			t.Errorf("ParseCompactedFile(%q) = %+v, %v; want %+v", name, got, err, f)
		}
		if _, err := ParseLoaderFile(name); !errors.Is(err, ErrNotLoaderFile) {
			t.Errorf("ParseLoaderFile(%q) = %v, want ErrNotLoaderFile", name, err)
		}
	}
	if got := (CompactedFile{Topic: "pv", SchemaID: 7, Seq: 2}).Name(); got != "pv+s7+002.parquet" {
		t.Errorf("name %q, want pv+s7+002.parquet (frozen)", got)
	}
	for _, bad := range []string{"pv+s7+000.avro", "pv+7+000.parquet", "pv+s7+0.parquet", "pv+s7+x.parquet", "pv+s7.parquet", "+s7+000.parquet"} {
		if f, err := ParseCompactedFile(bad); !errors.Is(err, ErrNotCompactedFile) {
			t.Errorf("ParseCompactedFile(%q) = %+v, %v; want ErrNotCompactedFile", bad, f, err)
		}
	}
}

func FuzzParseLoaderFile(f *testing.F) {
	f.Add("pv+1+2+3+s4.avro")
	f.Add("pv+s7+000.parquet")
	f.Fuzz(func(t *testing.T, name string) {
		lf, err := ParseLoaderFile(name)
		if err != nil {
			return
		}
		if lf.Name() != name {
			t.Fatalf("%q parses to %+v, which is named %q", name, lf, lf.Name())
		}
	})
}
