package daemon

// metrics_host.go serves the metrics of every array running on the host at one address
// (`uraid metrics --listen`), or writes them for node_exporter's textfile collector
// (`--textfile`): each scrape asks the arrays running then, through their control sockets, so
// arrays that start or stop later are picked up without a restart.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// hostScrapeTimeout bounds how long one array's daemon may take to answer a scrape.
const hostScrapeTimeout = 5 * time.Second

// TextfileName is the file --textfile writes in its directory.
const TextfileName = "uraid.prom"

// HostMetrics gathers the metrics of every array running now, each series labelled with its
// array, with uraid_array_daemon_up for each and uraid_build_info for this process. It is a
// prometheus.Gatherer, safe for concurrent use.
type HostMetrics struct {
	// Log hears about arrays that do not answer (nil: slog.Default()).
	Log *slog.Logger
}

var (
	helpDaemonUp = "1 if the array's daemon answered this scrape through its control socket, 0 if it did not (its socket is there, its daemon is not: uraid status says more)."
	helpBuild    = "1, with the build of the daemon serving the array (without array: of uraid metrics itself)."
)

// Gather asks every running array for its metrics, at once, and merges them.
func (h *HostMetrics) Gather() ([]*dto.MetricFamily, error) {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	names, err := Running()
	if err != nil {
		return nil, err
	}
	type answer struct {
		fams map[string]*dto.MetricFamily
		err  error
	}
	answers := make([]answer, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), hostScrapeTimeout)
			defer cancel()
			text, err := NewClient(name).Metrics(ctx)
			if err != nil {
				answers[i].err = err
				return
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			answers[i].fams, answers[i].err = p.TextToMetricFamilies(bytes.NewReader(text))
		})
	}
	wg.Wait()

	merged := map[string]*dto.MetricFamily{}
	up := gaugeFamily("uraid_array_daemon_up", helpDaemonUp)
	build := gaugeFamily("uraid_build_info", helpBuild)
	build.Metric = append(build.Metric, gaugeMetric(1, "version", Version, "goversion", runtime.Version()))
	merged[build.GetName()], merged[up.GetName()] = build, up
	var errs []error
	for i, name := range names {
		a := answers[i]
		ok := 1.0
		if a.err != nil {
			ok = 0
			log.Warn("metrics: array not answering", "array", name, "err", a.err)
		}
		up.Metric = append(up.Metric, gaugeMetric(ok, "array", name))
		for fname, f := range a.fams {
			for _, m := range f.Metric {
				setLabel(m, "array", name)
			}
			into, found := merged[fname]
			switch {
			case !found:
				merged[fname] = f
			case into.GetType() != f.GetType():
				errs = append(errs, fmt.Errorf("array %s: metric %s is a %s, another array's a %s: left out", name, fname, f.GetType(), into.GetType()))
			default:
				into.Metric = append(into.Metric, f.Metric...)
			}
		}
	}
	out := make([]*dto.MetricFamily, 0, len(merged))
	for _, f := range merged {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, errors.Join(errs...)
}

func gaugeFamily(name, help string) *dto.MetricFamily {
	return &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_GAUGE.Enum()}
}

// gaugeMetric is a gauge of value v with labels given as name, value pairs.
func gaugeMetric(v float64, labels ...string) *dto.Metric {
	m := &dto.Metric{Gauge: &dto.Gauge{Value: ptr(v)}}
	for i := 0; i+1 < len(labels); i += 2 {
		setLabel(m, labels[i], labels[i+1])
	}
	return m
}

// setLabel gives m the label name=value, replacing one it has, keeping the labels sorted.
func setLabel(m *dto.Metric, name, value string) {
	for _, l := range m.Label {
		if l.GetName() == name {
			l.Value = ptr(value)
			return
		}
	}
	m.Label = append(m.Label, &dto.LabelPair{Name: ptr(name), Value: ptr(value)})
	slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
}

// ServeHostMetrics serves h at http://addr/metrics until ctx is done.
func ServeHostMetrics(ctx context.Context, addr string, h *HostMetrics) error {
	if err := CheckListen("--listen", addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w (pick a free host:port, e.g. 127.0.0.1:9105)", addr, err)
	}
	return serveHostMetrics(ctx, ln, h)
}

func serveHostMetrics(ctx context.Context, ln net.Listener, h *HostMetrics) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(h, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// WriteTextfile writes what h gathers to dir/uraid.prom for node_exporter's textfile
// collector, atomically (a temporary file renamed over it), so that it never reads half a file.
func WriteTextfile(dir string, h *HostMetrics) error {
	fams, gerr := h.Gather()
	tmp, err := os.CreateTemp(dir, "."+TextfileName+".*")
	if err != nil {
		return fmt.Errorf("--textfile: %w", err)
	}
	defer os.Remove(tmp.Name()) // once renamed, there is nothing to remove
	enc := expfmt.NewEncoder(tmp, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			tmp.Close()
			return fmt.Errorf("--textfile: %w", err)
		}
	}
	// node_exporter runs as nobody; the file names arrays and member paths, which the metrics
	// served over TCP name too.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--textfile: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, TextfileName)); err != nil {
		return fmt.Errorf("--textfile: %w", err)
	}
	return gerr
}

func ptr[T any](v T) *T { return &v }
