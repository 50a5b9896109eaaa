package docstest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	File string // path as given to Extract
	Line int    // 1-based line of the opening fence
	Lang string // the fence's info string: sh, properties, ...
	// Run is true for a ```sh block marked run; Skip holds the reason of
	// one marked skip.
	Run  bool
	Skip string
	Text string // the block's lines, each ending in \n
}

func (b Block) String() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var markerRE = regexp.MustCompile(`^<!--\s*docs-test:\s*(run|skip:\s*(\S.*?))\s*-->\s*$`)

// Extract returns the fenced blocks of the Markdown file at path. A ```sh
// block without a valid marker on the line above is an ErrMarker, as is a
// marker not followed by a ```sh fence.
func Extract(path string) ([]Block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Extract on the file's contents.
func Parse(name string, data []byte) ([]Block, error) {
	var (
		blocks  []Block
		errs    []string
		cur     *Block
		fence   string
		prev    string
		lineNum int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lineNum++
		line := sc.Text()
		if cur != nil {
			if strings.TrimSpace(line) == fence {
				blocks = append(blocks, *cur)
				cur = nil
			} else {
				cur.Text += line + "\n"
			}
			prev = line
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			for strings.HasPrefix(trimmed[len(fence):], fence[:1]) {
				fence += fence[:1]
			}
			b := Block{File: name, Line: lineNum, Lang: strings.TrimSpace(trimmed[len(fence):])}
			m := markerRE.FindStringSubmatch(strings.TrimSpace(prev))
			switch {
			case b.Lang == "sh" && m == nil:
				errs = append(errs, fmt.Sprintf("%s:%d: a ```sh block needs <!-- docs-test: run --> or <!-- docs-test: skip: REASON --> on the line above", name, lineNum))
			case b.Lang == "sh" && m[1] == "run":
				b.Run = true
			case b.Lang == "sh":
				b.Skip = m[2]
			case m != nil:
				errs = append(errs, fmt.Sprintf("%s:%d: docs-test marker above a ```%s block: only ```sh blocks are run", name, lineNum, b.Lang))
			}
			cur = &b
			prev = line
			continue
		}
		if strings.Contains(prev, "docs-test") && markerRE.MatchString(strings.TrimSpace(prev)) {
			errs = append(errs, fmt.Sprintf("%s:%d: docs-test marker not followed by a ```sh fence", name, lineNum-1))
		} else if strings.Contains(line, "docs-test:") && !markerRE.MatchString(strings.TrimSpace(line)) && strings.HasPrefix(strings.TrimSpace(line), "<!--") {
			errs = append(errs, fmt.Sprintf("%s:%d: malformed docs-test marker %q (a skip needs a reason)", name, lineNum, line))
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		errs = append(errs, fmt.Sprintf("%s:%d: unclosed code block", name, cur.Line))
	}
	if len(errs) > 0 {
		return blocks, fmt.Errorf("%w:\n  %s", ErrMarker, strings.Join(errs, "\n  "))
	}
	return blocks, nil
}

// CheckProperties returns an ErrPropertiesComment naming every line of the
// properties blocks that carries a # or ! comment after a value. Lines that
// start with # or ! are comments and fine; so is a # inside a value that is
// not preceded by white space (a URL fragment is refused elsewhere).
func CheckProperties(blocks []Block) error {
	var errs []string
	for _, b := range blocks {
		if b.Lang != "properties" {
			continue
		}
		for i, line := range strings.Split(strings.TrimSuffix(b.Text, "\n"), "\n") {
			t := strings.TrimLeft(line, " \t")
			if t == "" || t[0] == '#' || t[0] == '!' {
				continue
			}
			if trailingCommentRE.MatchString(t) {
				errs = append(errs, fmt.Sprintf("%s:%d: %q: move the comment onto a line of its own", b.File, b.Line+1+i, line))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrPropertiesComment, strings.Join(errs, "\n  "))
	}
	return nil
}

var trailingCommentRE = regexp.MustCompile(`\s[#!]`)

// DocFiles returns the documents the docs tests read, relative to the
// repository root: README.md and every Markdown file under docs/.
func DocFiles(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, rerr := filepath.Rel(root, path)
			if rerr != nil {
				return rerr
			}
			files = append(files, rel)
		}
		return err
	})
	return files, err
}
