package properties

import (
	"bytes"
	"maps"
	"regexp"
	"strings"
	"testing"
)

func checkRoundTrip(t *testing.T, m map[string]string) {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, m); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b)
	if err != nil {
		t.Fatalf("Read(Write(%q)): %v", m, err)
	}
	if !maps.Equal(got, m) {
		t.Fatalf("Read(Write(m)) = %q, want %q (written %q)", got, m, b.String())
	}
}

func TestWriteRoundTrip(t *testing.T) {
	checkRoundTrip(t, map[string]string{
		"topics":           regexp.QuoteMeta("page.views"), // page\.views
		"x=y":              "a=b:c",
		"key with spaces":  "value with spaces",
		"#notcomment":      "!notcomment",
		"!bang":            "#hash",
		"unicode.ключ.😀":   "значение é 😀",
		"leading":          "   three spaces first",
		"trailing":         "spaces after   ",
		"newlines":         "one\ntwo\r\nthree\rfour",
		"tabs":             "\tin\tand\f",
		"backslash.end":    `ends\`,
		"backslashes":      `\\server\share \u0041`,
		"":                 "empty key",
		"empty.value":      "",
		"control":          "\x00\x01\x1b\x7f",
		" lead key":        "v",
		"invalid.utf8\xff": "\xfe\xff",
	})
}

func TestWriteSortedAndReadable(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, map[string]string{"b": "2", "a": `page\.views`, "c": " x"}); err != nil {
		t.Fatal(err)
	}
	want := "a=page\\\\.views\nb=2\nc=\\ x\n"
	if b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
}

// FuzzRoundTrip: Read(Write(m)) == m for any strings.
func FuzzRoundTrip(f *testing.F) {
	f.Add("a\\.b", "x=y", " lead", "key with spaces", "#c", "😀\n")
	f.Add("", "", "\\", "\\\\", "\r", "\\u0041")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string) {
		checkRoundTrip(t, map[string]string{k1: v1, k2: v2, k3: v3})
		if strings.TrimSpace(k1) != "" {
			checkRoundTrip(t, map[string]string{k1: v1})
		}
	})
}
