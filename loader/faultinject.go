package loader

import (
	"os"
	"sync/atomic"
)

// EnvSkipDedupOnce, set to 1 in a loader process's environment, makes it
// keep the first mirror duplicate it recognises instead of dropping it: a
// bug injected on purpose, so that the soak (package pipeline/soak) can
// show it catches a record loaded twice. Never set it otherwise.
const EnvSkipDedupOnce = "TRIBUTARY_LOADER_FAULT_SKIP_DEDUP_ONCE"

// skipDedup is true until the injected bug has been used.
var skipDedup atomic.Bool

func init() { skipDedup.Store(os.Getenv(EnvSkipDedupOnce) == "1") }

// skipDedupOnce reports whether this duplicate is to be kept (the injected
// bug), at most once per process.
func skipDedupOnce() bool { return skipDedup.Load() && skipDedup.CompareAndSwap(true, false) }
