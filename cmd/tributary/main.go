// Command tributary is the one binary of the Tributary log pipeline: a
// subcommand per daemon (broker, registry, ...) and per tool (topics,
// produce, consume, bench).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "tributary:", err)
		os.Exit(1)
	}
}
