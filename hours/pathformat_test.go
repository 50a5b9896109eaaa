package hours

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary/tributary/internal/filesys"
)

func TestPathFormatLayouts(t *testing.T) {
	at := time.Date(2026, 12, 2, 5, 40, 0, 0, time.UTC)
	for _, c := range []struct {
		d       time.Duration
		format  string
		dir     string
		columns string
		values  string
	}{
		{time.Hour, "", "t/2026/12/02/05", "", ""},
		{10 * time.Minute, "", "t/2026/12/02/05/40", "", ""},
		{time.Hour, "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH", "t/year=2026/month=12/day=02/hour=05", "year,month,day,hour", "2026,12,02,05"},
		{time.Hour, "'dt'=YYYY-MM-dd/'hr'=HH", "t/dt=2026-12-02/hr=05", "dt,hr", "2026-12-02,05"},
		{2 * time.Hour, "'dt'=yyyyMMdd_HH", "t/dt=20261202_04", "dt", "20261202_04"},
		{24 * time.Hour, "'dt'=YYYY-MM-dd", "t/dt=2026-12-02", "dt", "2026-12-02"},
		{5 * time.Minute, "YYYY/MM/dd/HH-mm", "t/2026/12/02/05-40", "", ""},
	} {
		l, err := NewLayout(c.d, c.format)
		if err != nil {
			t.Fatalf("%q: %v", c.format, err)
		}
		if got := l.Dir("", "t", at); got != c.dir {
			t.Errorf("%q: Dir = %s, want %s", c.format, got, c.dir)
		}
		if got := strings.Join(l.Columns(), ","); got != c.columns {
			t.Errorf("%q: Columns = %s, want %s", c.format, got, c.columns)
		}
		if got := strings.Join(l.Values(at.Truncate(c.d)), ","); got != c.values {
			t.Errorf("%q: Values = %s, want %s", c.format, got, c.values)
		}
		start, ok := l.startOf(strings.Split(strings.TrimPrefix(c.dir, "t/"), "/"))
		if !ok || !start.Equal(at.Truncate(c.d)) {
			t.Errorf("%q: startOf(%s) = %v %v, want %v", c.format, c.dir, start, ok, at.Truncate(c.d))
		}
	}
}

func TestPathFormatRefused(t *testing.T) {
	for format, why := range map[string]string{
		"'dt'=YYYY-MM-dd":                 "hour (HH)",
		"YYYY/MM/dd/HH":                   "minute (mm)", // with 10-minute partitions below
		"'dt'=YYYY-MM-dd/HH":              "every level is Hive-style",
		"YYYY/MM/dd/HH/ss":                "not a supported pattern letter",
		"YYYY/MMM/dd/HH":                  "want MM",
		"YYYY//MM/dd/HH":                  "needs a time field",
		"'Dt'=YYYY/MM/dd/HH":              "partition column",
		"'dt'=YYYY/'dt'=MM/'d'=dd/'h'=HH": "appears twice",
		"YYYY/MM/dd/HH/'x.y'":             "quoted text",
		"'dt'=YYYY-MM-dd/'hr'=HH/mm":      "every level is Hive-style",
		"YYYY/MM/dd/HH=mm":                "'='",
		"YYYY/MM/dd/'hr":                  "unterminated",
		"YYYY/MM/dd/HH/yyyy":              "twice",
	} {
		d := time.Hour
		if strings.Contains(why, "minute") {
			d = 10 * time.Minute
		}
		if _, err := NewLayout(d, format); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: err %v, want one saying %q", format, err, why)
		}
	}
}

func TestListHiveStyle(t *testing.T) {
	fsys, base := filesys.Local(), t.TempDir()
	l, err := NewLayout(time.Hour, "'dt'=YYYY-MM-dd/'hr'=HH")
	if err != nil {
		t.Fatal(err)
	}
	l.Stored = Stored{Keys: true, Coordinates: true}
	if err := filesys.WriteFile(fsys, base+"/t/"+PartitioningFile, EncodeLayout(l)); err != nil {
		t.Fatal(err)
	}
	h1 := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	h2 := h1.Add(time.Hour)
	for _, dir := range []string{l.Dir(base, "t", h2), l.Dir(base, "t", h1), l.Dir(base, "t", h1) + ".c1",
		base + "/t/dt=2026-12-01/hr=5", base + "/t/dt=2026-12-01/05", base + "/t/2026/12/01/23"} {
		if err := fsys.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadLayout(fsys, base, "t")
	if err != nil || !got.Same(l) {
		t.Fatalf("ReadLayout = %+v, %v; want %+v", got, err, l)
	}
	list, err := List(fsys, base, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || !list[0].Start.Equal(h1) || list[0].Dir != base+"/t/dt=2026-12-01/hr=23" ||
		!list[1].Start.Equal(h2) || list[1].Dir != base+"/t/dt=2026-12-02/hr=00" {
		t.Fatalf("List = %+v", list)
	}
}
