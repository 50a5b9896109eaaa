package avro

import "strings"

// FullName resolves an Avro name used in namespace ns to its full name (the
// specification's "Names": a name with a dot is already full; otherwise it
// is qualified by the enclosing namespace, if any).
func FullName(name, ns string) string {
	if strings.Contains(name, ".") || ns == "" {
		return name
	}
	return ns + "." + name
}

// NameOf returns the full name of the named type def (a record, enum or
// fixed, as parsed JSON) defined in enclosing namespace ns, with its own
// "namespace" attribute applied, and the namespace its children are in.
func NameOf(def map[string]any, ns string) (full, inner string) {
	name, _ := def["name"].(string)
	if n, ok := def["namespace"].(string); ok {
		ns = n
	}
	full = FullName(name, ns)
	return full, namespaceOf(full)
}

func namespaceOf(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i]
	}
	return ""
}
