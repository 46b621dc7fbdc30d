package testutil

import (
	"bytes"
	"log/slog"
	"sync"
)

// LogBuffer is a log a test reads while the code under test writes it, from any goroutine.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger is a text (key=value) logger, as the daemon's, writing to a new LogBuffer.
func Logger() (*slog.Logger, *LogBuffer) {
	b := &LogBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}
