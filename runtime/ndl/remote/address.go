package remote

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ParseAddress splits a server address into the network and address that
// package net takes: "unix:PATH" → ("unix", PATH) and "tcp:HOST:PORT" →
// ("tcp", "HOST:PORT"), where HOST is a name or an IP literal (an IPv6
// literal in brackets, "tcp:[::1]:7000") and PORT a number 0..65535. Any
// other form is an error wrapping ErrBadAddress.
func ParseAddress(s string) (network, address string, err error) {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", fmt.Errorf("remote: address %q: %w: want unix:PATH or tcp:HOST:PORT", s, ErrBadAddress)
	}
	switch scheme {
	case "unix":
		if rest == "" {
			return "", "", fmt.Errorf("remote: address %q: %w: empty socket path", s, ErrBadAddress)
		}
		if strings.IndexByte(rest, 0) >= 0 {
			return "", "", fmt.Errorf("remote: address %q: %w: NUL byte in socket path", s, ErrBadAddress)
		}
		if err := CheckSocketPath(rest); err != nil {
			return "", "", fmt.Errorf("remote: address %q: %w: %w", s, ErrBadAddress, err)
		}
		return "unix", rest, nil
	case "tcp":
		host, port, err := net.SplitHostPort(rest)
		if err != nil {
			return "", "", fmt.Errorf("remote: address %q: %w: want tcp:HOST:PORT (%v)", s, ErrBadAddress, err)
		}
		if host == "" {
			return "", "", fmt.Errorf("remote: address %q: %w: empty host (use 127.0.0.1 or localhost)", s, ErrBadAddress)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return "", "", fmt.Errorf("remote: address %q: %w: port %q is not a number 0..65535", s, ErrBadAddress, port)
		}
		return "tcp", net.JoinHostPort(host, port), nil
	}
	return "", "", fmt.Errorf("remote: address %q: %w: unknown scheme %q, want unix:PATH or tcp:HOST:PORT", s, ErrBadAddress, scheme)
}

// MaxSocketPath is the longest path a Unix socket can be bound or
// connected at: the 108 bytes of Linux's sockaddr_un.sun_path, less its
// terminating NUL.
const MaxSocketPath = 107

// CheckSocketPath refuses a Unix socket path longer than MaxSocketPath
// bytes, which the kernel would refuse with only "invalid argument",
// naming its length and the limit.
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("socket path %s is %d bytes, past the %d a Unix socket's address holds: use a shorter one", path, len(path), MaxSocketPath)
	}
	return nil
}

// Listen listens on a server address (see ParseAddress). The protocol has no
// authentication, so a TCP host must be a loopback IP literal (127.0.0.0/8,
// ::1) or "localhost" — and the socket bound must be on a loopback address —
// unless allowNonLoopback (the CLI's --allow-remote); otherwise the error
// wraps ErrNotLoopback. A unix socket path left behind by a dead server (a
// socket nobody accepts on) is removed first; a live socket or any other
// file at the path is left alone and listening fails.
func Listen(addr string, allowNonLoopback bool) (net.Listener, error) {
	network, address, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	if network == "unix" {
		if err := removeStaleSocket(address); err != nil {
			return nil, fmt.Errorf("remote: listen %s: %w", addr, err)
		}
		l, err := net.Listen(network, address)
		if err != nil {
			return nil, fmt.Errorf("remote: listen %s: %w", addr, err)
		}
		return l, nil
	}

	host, _, _ := net.SplitHostPort(address) // ParseAddress checked it
	if !allowNonLoopback && !isLoopbackHost(host) {
		return nil, fmt.Errorf("remote: listen %s: host %q is %w (127.0.0.0/8, ::1 or localhost); the protocol has no authentication, pass --allow-remote to listen on other interfaces",
			addr, host, ErrNotLoopback)
	}
	l, err := net.Listen(network, address)
	if err != nil {
		return nil, fmt.Errorf("remote: listen %s: %w", addr, err)
	}
	if !allowNonLoopback {
		// "localhost" is resolved by the system; refuse if it bound elsewhere.
		if ta, ok := l.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
			err := fmt.Errorf("remote: listen %s: bound %s, which is %w; pass --allow-remote to listen on other interfaces",
				addr, l.Addr(), ErrNotLoopback)
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("remote: close %s: %w", l.Addr(), cerr))
			}
			return nil, err
		}
	}
	return l, nil
}

// isLoopbackHost reports whether host is "localhost" or a loopback IP
// literal.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// removeStaleSocket removes path when it is a unix socket nobody accepts
// on. A missing path, a live socket and any other kind of file are left
// alone (net.Listen then reports the conflict).
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		if cerr := c.Close(); cerr != nil {
			return fmt.Errorf("socket %s is in use by a live server (closing the probe: %v)", path, cerr)
		}
		return fmt.Errorf("socket %s is in use by a live server", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return nil // cannot tell; leave it for net.Listen to report
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// ListenerAddress returns the address a listener is bound to in this
// package's form: "tcp:HOST:PORT" with the port the system chose for
// "tcp:127.0.0.1:0", or "unix:PATH".
func ListenerAddress(l net.Listener) string {
	switch a := l.Addr().(type) {
	case *net.TCPAddr:
		return "tcp:" + a.String()
	case *net.UnixAddr:
		return "unix:" + a.Name
	}
	return l.Addr().Network() + ":" + l.Addr().String()
}

// ReachableFromOtherHosts reports whether a listener accepts connections
// from other machines: a TCP listener not bound to a loopback address.
func ReachableFromOtherHosts(l net.Listener) bool {
	a, ok := l.Addr().(*net.TCPAddr)
	return ok && !a.IP.IsLoopback()
}
