package main

import (
	"io"
	"log/slog"

	"github.com/spf13/cobra"
)

// parseLogLevel reads the value of --log-level.
func parseLogLevel(name string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(name)); err != nil {
		return 0, badFlag("log-level", name, "want debug, info, warn or error")
	}
	return level, nil
}

// textLogger is the logger of every command: text lines on w from level up.
func textLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// newLogger is the logger of a daemon command, on its stderr, at the level
// --log-level names.
func newLogger(cmd *cobra.Command, levelName string) (*slog.Logger, error) {
	level, err := parseLogLevel(levelName)
	if err != nil {
		return nil, err
	}
	return textLogger(cmd.ErrOrStderr(), level), nil
}
