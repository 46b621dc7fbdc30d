package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"uraid/array"
	"uraid/raid"
)

// ErrNotRunning means no daemon answers for the array.
var ErrNotRunning = errors.New("array is not running")

// Client talks to the daemon of one array.
type Client struct {
	name string
	hc   *http.Client
}

// NewClient returns a client for the array called name. It does not connect until asked.
func NewClient(name string) *Client {
	path := SocketPath(name)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}
	return &Client{name: name, hc: &http.Client{Transport: tr}}
}

// StatusJSON returns the array's status as the daemon encoded it.
func (c *Client) StatusJSON(ctx context.Context) ([]byte, error) {
	return c.do(ctx, http.MethodGet, "/status")
}

// Status decodes the array's status into v.
func (c *Client) Status(ctx context.Context, v any) error {
	b, err := c.StatusJSON(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Metrics returns the daemon's Prometheus metrics, in text format.
func (c *Client) Metrics(ctx context.Context) ([]byte, error) {
	return c.do(ctx, http.MethodGet, "/metrics")
}

// Stop asks the daemon to stop the array and returns once it has.
func (c *Client) Stop(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodPost, "/stop")
	return err
}

// Handover asks the daemon to finish the requests it holds and leave the device to a successor;
// it returns once the daemon has let go of the members.
func (c *Client) Handover(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodPost, "/handover")
	return err
}

// FailQueue asks a daemon running with the test hooks to fail its device's first queue.
func (c *Client) FailQueue(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodPost, "/debug/fail-queue")
	return err
}

// Events streams the array's events from now on, calling fn with each, until ctx is done, fn
// returns an error (which Events returns), or the daemon goes (nil: the array stopped, or its
// daemon exited).
func (c *Client) Events(ctx context.Context, fn func(array.Event) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://uraid/events", nil)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.dialError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("array %s: daemon answered %s (an older daemon without events? uraid restart %s updates it)", c.name, resp.Status, c.name)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var e array.Event
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("array %s: event stream: %w", c.name, err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

func (c *Client) dialError(err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("array %s: %w (no daemon answers on %s; see uraid list)", c.name, ErrNotRunning, SocketPath(c.name))
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("array %s: %w (the control socket is root's: run as root)", c.name, err)
	}
	return fmt.Errorf("array %s: %w", c.name, err)
}

func (c *Client) do(ctx context.Context, method, path string) ([]byte, error) {
	return c.send(ctx, method, path, nil)
}

// doBody sends in, JSON-encoded, when not nil.
func (c *Client) doBody(ctx context.Context, method, path string, in any) ([]byte, error) {
	var rd io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	return c.send(ctx, method, path, rd)
}

func (c *Client) send(ctx context.Context, method, path string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://uraid"+path, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.dialError(err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("array %s: %w", c.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var eb errorBody
		if json.Unmarshal(respBody, &eb) == nil && eb.Error != "" {
			if strings.HasPrefix(eb.Error, "array "+c.name+":") {
				return nil, errors.New(eb.Error) // it says which array already
			}
			return nil, fmt.Errorf("array %s: %s", c.name, eb.Error)
		}
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("array %s: %w (%s): its daemon is an older build; restart it with this one: uraid restart %s", c.name, ErrUnsupported, path, c.name)
		}
		return nil, fmt.Errorf("array %s: daemon answered %s", c.name, resp.Status)
	}
	return respBody, nil
}

// ChangeMember fails, removes, adds or replaces a member (op is one of OpFail, OpRemove, OpAdd,
// OpReplace) and returns what became of it; a rebuild it starts runs on in the daemon.
func (c *Client) ChangeMember(ctx context.Context, op string, ch MemberChange) (string, error) {
	// Made stable here, in the caller's directory: the daemon runs in another, and records the
	// member by this path.
	ch.Member = raid.StablePath(ch.Member)
	if ch.New != "" {
		ch.New = raid.StablePath(ch.New)
	}
	b, err := c.doBody(ctx, http.MethodPost, "/"+op, ch)
	if err != nil {
		return "", err
	}
	var res MemberChangeResult
	if err := json.Unmarshal(b, &res); err != nil {
		return "", fmt.Errorf("array %s: %s: %w", c.name, op, err)
	}
	return res.Result, nil
}
