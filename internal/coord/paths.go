package coord

import (
	"fmt"
	"strings"
)

// ValidatePath checks that p is a node path ZooKeeper accepts: absolute, no
// trailing slash (except the root "/"), no empty, "." or ".." component and
// no NUL or control characters. Both implementations call it first so that a
// path that works in memcoord also works against ZooKeeper.
func ValidatePath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("%w: %q is not absolute", ErrBadPath, p)
	}
	if p == "/" {
		return nil
	}
	if strings.HasSuffix(p, "/") {
		return fmt.Errorf("%w: %q ends with a slash", ErrBadPath, p)
	}
	for _, part := range strings.Split(p[1:], "/") {
		switch part {
		case "":
			return fmt.Errorf("%w: %q has an empty component", ErrBadPath, p)
		case ".", "..":
			return fmt.Errorf("%w: %q has a relative component", ErrBadPath, p)
		}
	}
	for _, r := range p {
		// ZooKeeper rejects these code points (PathUtils.validatePath).
		if r == 0 || (r > 0 && r < 0x20) || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("%w: %q contains character %U", ErrBadPath, p, r)
		}
	}
	return nil
}

// Join appends names to a parent path: Join("/brokers", "ids", "1") is
// "/brokers/ids/1" and Join("/", "a") is "/a". It does not validate.
func Join(parent string, names ...string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(parent, "/"))
	for _, n := range names {
		b.WriteByte('/')
		b.WriteString(n)
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// Parent returns the parent of an absolute path ("/" for top-level nodes and
// for "/" itself).
func Parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// Base returns the last component of an absolute path ("" for "/").
func Base(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
