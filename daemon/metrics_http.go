package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsServer serves GET /metrics over TCP (--metrics-listen), for a Prometheus that cannot
// reach the root-only control socket. It serves nothing else: status and stop stay on the socket.
type metricsServer struct {
	addr string
	ln   net.Listener // set by listen, or later by the retrying goroutine
	srv  *http.Server
	stop chan struct{}
	done chan struct{}
}

// CheckMetricsListen says what is wrong with addr as --metrics-listen, or nil ("" is off).
func CheckMetricsListen(addr string) error { return CheckListen("--metrics-listen", addr) }

// CheckListen says what is wrong with addr as flag, a TCP address to serve metrics at, or nil
// ("" is off): HOST:PORT (HOST may be empty for every address), PORT a number from 0 to 65535
// (0: the kernel picks one). It does not bind: ProbeMetricsListen does.
func CheckListen(flag, addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("%s %q: give HOST:PORT, e.g. 127.0.0.1:9105 or :9105 for every address", flag, addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n > 65535 {
		return fmt.Errorf("%s %q: port %q is not a number from 0 to 65535; give HOST:PORT, e.g. 127.0.0.1:9105", flag, addr, port)
	}
	return nil
}

// ProbeMetricsListen binds addr and lets it go again, so that create can refuse an address in use
// (or one this host does not have) before it writes anything. The daemon binds it again when it
// starts; should a program take the port in between, the daemon's start fails and create undoes
// what it wrote.
func ProbeMetricsListen(addr string) error {
	if addr == "" {
		return nil
	}
	ms, err := listenMetrics(addr)
	if err != nil {
		return err
	}
	return ms.ln.Close()
}

// listenMetrics binds addr now, so that a bad address fails create or assemble before the device
// exists.
func listenMetrics(addr string) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w (pick a free host:port, e.g. 127.0.0.1:9105)", addr, err)
	}
	return &metricsServer{addr: addr, ln: ln}, nil
}

// metricsRetryFor bounds how long a successor waits for the port its predecessor still holds.
const metricsRetryFor = time.Minute

// serve answers on the listener; with none bound yet (a successor whose predecessor may still be
// exiting with the port), it binds addr in the background, trying again until metricsRetryFor has
// passed. The device is served either way: metrics are not worth failing the array for.
func (m *metricsServer) serve(reg prometheus.Gatherer, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	ln := m.ln
	go func() {
		defer close(m.done)
		if ln == nil {
			ln = m.bind(log)
			if ln == nil {
				return
			}
		}
		if err := m.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "addr", m.addr, "err", err)
		}
	}()
}

// bind is the successor's retrying listen; nil once stopped or out of time.
func (m *metricsServer) bind(log *slog.Logger) net.Listener {
	deadline := time.Now().Add(metricsRetryFor)
	for {
		ln, err := net.Listen("tcp", m.addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			log.Warn("--metrics-listen: address not bound; serving metrics on the control socket only", "addr", m.addr, "err", err)
			return nil
		}
		select {
		case <-m.stop:
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops serving and waits for the server goroutine; safe on a server never served.
func (m *metricsServer) Close() {
	if m == nil {
		return
	}
	if m.srv == nil {
		if m.ln != nil {
			m.ln.Close()
		}
		return
	}
	close(m.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	<-m.done
}
